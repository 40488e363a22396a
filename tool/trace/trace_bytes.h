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
};

std::unique_ptr<TraceBytes> bytes_in_memory(std::string bytes);
// Throws TraceError when `path` is not a regular file that can be opened.
std::unique_ptr<TraceBytes> bytes_of_file(const std::string& path);

}  // namespace cuaudit
