// Where a trace's bytes come from: a file read piece by piece (a trace larger than memory is never
// read whole), or bytes already in memory (tests, the fuzzer).
#pragma once

#include <cstddef>
#include <memory>
#include <string>

namespace cuaudit {

class TraceBytes {
 public:
  virtual ~TraceBytes() = default;
  virtual size_t size() const = 0;
  // `n` bytes at `offset` (within size()), valid until the next call.
  virtual const char* read(size_t offset, size_t n) = 0;
  // Not read for a while: a file's descriptor is closed until the next read, so that a run of
  // thousands of processes does not hold one per trace (ulimit -n is often 1024).
  virtual void rest() {}
  // Where byte `offset` of what is read lies in the trace file itself: the same offset, but for a
  // compacted trace (bytes_of_trace), whose first bytes are the compacted file's.
  virtual size_t trace_offset(size_t offset) const { return offset; }
};

std::unique_ptr<TraceBytes> bytes_in_memory(std::string bytes);
// Throws TraceError when `path` is not a regular file that can be opened.
std::unique_ptr<TraceBytes> bytes_of_file(const std::string& path);
// A trace file as the tool reads it: its compacted beginning (compacted-<pid>.cutrace beside a
// trace-<pid>.cutrace, made by the launcher in watch mode: tool/compaction/) followed by the trace
// from where that file says it goes on; the file alone when it was never compacted, or when the
// compacted file is not of this trace (another header). Throws as bytes_of_file.
std::unique_ptr<TraceBytes> bytes_of_trace(const std::string& path);
// compacted-<pid>.cutrace beside trace-<pid>.cutrace; empty for a path not named as a trace.
std::string compacted_trace_path(const std::string& trace_path);
// The compacted beginning of the trace at `trace_path` (whose bytes are `trace`): its file's bytes
// and where the trace goes on after it (CompactionRecord::cut); cut 0 and no bytes when there is
// none, or when the compacted file is not of this trace.
struct CompactedBeginning {
  std::unique_ptr<TraceBytes> bytes;
  uint64_t cut = 0;
};
CompactedBeginning compacted_beginning(const std::string& trace_path, TraceBytes& trace);

}  // namespace cuaudit
