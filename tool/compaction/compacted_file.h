// The bytes of compacted-<pid>.cutrace (trace_compaction.h): the trace's header, a chunk with the
// CompactionRecord, then each chunk of the part compacted with the records it keeps, in their order
// (a chunk's events stay in sequence order for the reader's merge), then the memory samples and
// device states kept. Records are copied as they were written, but for allocations and releases
// written as compact events: the events they followed on from may be gone, so those kept are
// encoded again after the one written before them in the same chunk (a full record where they
// cannot be).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "trace_format.h"

namespace cuaudit {

class TraceBytes;

// A device's memory samples (or device states), thinned as they come so that at most about
// `limit` stay: each time there are twice as many, neighbours are merged, keeping the sample with
// the higher use (the device state taken at a failed allocation, else the later one).
class SampleThinning {
 public:
  explicit SampleThinning(size_t limit) : limit_(limit) {}
  void add(const char* record, size_t size);
  uint64_t left_out() const { return left_out_; }
  // Every record kept, samples first.
  std::vector<std::string> kept() const;

 private:
  static bool keep_first(const std::string& a, const std::string& b);
  void thin(std::vector<std::string>& records);
  size_t limit_;
  std::map<std::pair<uint16_t, int32_t>, std::vector<std::string>> by_device_;  // (record type, device)
  uint64_t left_out_ = 0;
};

struct CompactedFileInput {
  TraceBytes* bytes = nullptr;             // what was read: the trace, after its compacted beginning if any
  size_t end = 0;                          // where the whole chunks end, in `bytes`
  uint32_t version = 0;                    // the file header's
  uint64_t pid = 0, nonce = 0;             // the file header's, which seal every chunk
  std::function<bool(uint64_t seq)> keep;  // an allocation's or release's, by seq (paired_events.h)
  size_t samples_per_device = 4096;
};

struct CompactedFile {
  std::string chunks;  // every chunk after the CompactionRecord's
  uint64_t samples_left_out = 0;
  uint64_t damaged_chunks = 0;  // failed their checksum: not carried over
};

CompactedFile compact_chunks(const CompactedFileInput& in);

// A sealed chunk of thread `tid` holding `payload`.
std::string sealed_chunk(const std::string& payload, uint32_t tid, uint32_t version, uint64_t pid, uint64_t nonce);

}  // namespace cuaudit
