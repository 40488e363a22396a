// The meaning of each record of a trace (common/trace_records.inc dispatches every record to the
// parse function of its struct), into a ProcessTrace: what becomes an event, what becomes the
// trace's metadata, what older writers meant (pool blocks before version 5, shorter records). The
// passes over a file are trace_reader.cpp's; this owns what one record says.
#pragma once

#include <cstdint>
#include <cstring>
#include <memory>
#include <unordered_map>
#include <utility>

#include "compact_event.h"
#include "trace_model.h"

namespace cuaudit {

// A value of type T read from bytes that may not be aligned for it.
template <typename T>
T load_unaligned(const char* p) {
  T value;
  memcpy(&value, p, sizeof value);
  return value;
}

class RecordParser {
 public:
  RecordParser(ProcessTrace& out, uint32_t version);
  ~RecordParser();
  // One record of `size` bytes (its header's); false when it is malformed: the rest of its chunk
  // cannot be trusted. A type added by a newer writer is skipped and counted.
  bool parse(const char* record, size_t size);
  // The thread whose chunk the next records come from (compact events are relative to its previous one).
  void start_chunk(uint32_t tid);
  // A chunk that could not be read: the next compact event of its thread cannot follow on from it.
  void lose_chunk(uint32_t tid);
  trace::CompactEventState compact_state(uint32_t tid) const;
  void set_compact_state(uint32_t tid, const trace::CompactEventState& state);
  size_t undecodable() const;      // compact events relative to a lost chunk
  size_t unknown_apis() const;     // events naming an API this build does not know
  size_t unknown_records() const;  // records of a type this build does not know
  // Each allocation's Python stack and launch count, by its seq (AllocPython records).
  std::unordered_map<uint64_t, std::pair<uint64_t, uint64_t>> take_alloc_python();

  class Builder;  // one parse function per record struct

 private:
  std::unique_ptr<Builder> builder_;
};

}  // namespace cuaudit
