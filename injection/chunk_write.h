// One chunk of the trace written with one writev: its header, its payload and, once exit processing
// began, the writer's closing mark as a chunk of its own in the same write (O_APPEND keeps a
// writev to a regular file whole), so that the file of a process that reached its end always ends
// with one (trace_format.h, TraceClosedRecord). Safe in a signal handler: no allocation, no lock.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>

namespace cuaudit::inject {

// Writes the chunk of `bytes` at `payload` from thread `tid` to `fd` (retrying on EINTR); with
// `closing`, the closing mark's chunk after it. Returns writev's answer; `total` is what it should
// have written.
ssize_t write_chunk_bytes(int fd, const void* payload, uint32_t bytes, uint32_t tid, bool closing,
                          size_t& total) noexcept;

}  // namespace cuaudit::inject
