#include "chunk_write.h"

#include <fcntl.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "run_dir_layout.h"
#include "trace_format.h"

namespace cuaudit::inject {

uint64_t draw_file_nonce() noexcept {
  uint64_t nonce = 0;
  if (syscall(SYS_getrandom, &nonce, sizeof nonce, 1 /* GRND_NONBLOCK */) == static_cast<long>(sizeof nonce) && nonce)
    return nonce;
  timespec real{}, mono{};
  clock_gettime(CLOCK_REALTIME, &real);
  clock_gettime(CLOCK_MONOTONIC, &mono);
  const uint64_t words[3] = {static_cast<uint64_t>(real.tv_sec) * 1'000'000'000u + static_cast<uint64_t>(real.tv_nsec),
                             static_cast<uint64_t>(mono.tv_nsec), static_cast<uint64_t>(getpid())};
  return trace::content_hash64(words, sizeof words);
}

int create_trace_file(const char* dir, uint64_t pid, uint64_t nonce, char* path, size_t path_bytes, char* error,
                      size_t error_bytes) noexcept {
  // A new file of our own (O_EXCL, O_NOFOLLOW: never a file or link someone else put there, never
  // another process's trace).
  const auto p = static_cast<unsigned long long>(pid);
  int fd = -1;
  for (int attempt = 0; attempt < 100 && fd < 0; ++attempt) {
    const int n = attempt == 0
                      ? snprintf(path, path_bytes, "%s/%s%llu%s", dir, run_dir::Trace.prefix, p, run_dir::Trace.suffix)
                      : snprintf(path, path_bytes, "%s/%s%llu.%d%s", dir, run_dir::Trace.prefix, p, attempt,
                                 run_dir::Trace.suffix);
    if (n >= static_cast<int>(path_bytes)) {
      snprintf(error, error_bytes, "trace directory path is too long: %s", dir);
      return -1;
    }
    fd = ::open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_APPEND | O_CLOEXEC, 0600);
    if (fd < 0 && errno != EEXIST) break;
  }
  if (fd < 0) {
    snprintf(error, error_bytes, "cannot create trace file %s: %s", path, strerror(errno));
    return -1;
  }
  const trace::FileStart start = trace::file_start(pid, nonce);
  if (write(fd, &start, sizeof start) != static_cast<ssize_t>(sizeof start)) {
    snprintf(error, error_bytes, "cannot write trace file %s: %s", path, strerror(errno));
    ::close(fd);
    return -1;
  }
  return fd;
}

ssize_t write_chunk_bytes(int fd, const void* payload, uint32_t bytes, uint32_t tid, uint64_t seal, bool closing,
                          size_t& total) noexcept {
  trace::ChunkHeader header{trace::kChunkMagic, bytes, tid, trace::chunk_checksum(payload, bytes, seal)};
  static constexpr trace::TraceClosedRecord kClosed{
      trace::header_for<trace::TraceClosedRecord>(sizeof(trace::TraceClosedRecord))};
  trace::ChunkHeader closed_header{trace::kChunkMagic, sizeof kClosed, tid,
                                   trace::chunk_checksum(&kClosed, sizeof kClosed, seal)};
  iovec parts[4] = {{&header, sizeof header},
                    {const_cast<void*>(payload), bytes},
                    {&closed_header, sizeof closed_header},
                    {const_cast<trace::TraceClosedRecord*>(&kClosed), sizeof kClosed}};
  const int count = closing ? 4 : 2;
  total = sizeof header + bytes + (closing ? sizeof closed_header + sizeof kClosed : 0);
  ssize_t written;
  do {
    written = writev(fd, parts, count);
  } while (written < 0 && errno == EINTR);
  return written;
}

}  // namespace cuaudit::inject
