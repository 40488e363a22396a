// The trace file's framing as the writer writes it (common/trace_framing.h): the file's start, with
// the number that names it, and each chunk, sealed with it. Safe in a signal handler (a forked
// child's trace may be made there): no allocation, no lock.
//
// A chunk is written with one writev: its header, its payload and, once exit processing began, the
// writer's closing mark as a chunk of its own in the same write (O_APPEND keeps a writev to a
// regular file whole), so that the file of a process that reached its end always ends with one
// (trace_format.h, TraceClosedRecord).
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>

namespace cuaudit::inject {

// A number no other trace file has (trace::FileIdentity): the kernel's random bytes, else the
// clocks and the pid mixed.
uint64_t draw_file_nonce() noexcept;

// Creates the trace of process `pid` in `dir` (trace-PID.cutrace, or trace-PID.N.cutrace when a
// process of that pid made one before: pid reuse over a long run) and writes its start. Returns
// the descriptor (O_APPEND) with the file's name in `path`, or -1 with the reason in `error`.
int create_trace_file(const char* dir, uint64_t pid, uint64_t nonce, char* path, size_t path_bytes, char* error,
                      size_t error_bytes) noexcept;

// Writes the chunk of `bytes` at `payload` from thread `tid` to `fd` (retrying on EINTR); with
// `closing`, the closing mark's chunk after it. `seal`: trace::chunk_seal of the file and `tid`.
// Returns writev's answer; `total` is what it should have written.
ssize_t write_chunk_bytes(int fd, const void* payload, uint32_t bytes, uint32_t tid, uint64_t seal, bool closing,
                          size_t& total) noexcept;

}  // namespace cuaudit::inject
