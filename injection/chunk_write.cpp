#include "chunk_write.h"

#include <sys/uio.h>

#include <cerrno>

#include "trace_format.h"

namespace cuaudit::inject {

ssize_t write_chunk_bytes(int fd, const void* payload, uint32_t bytes, uint32_t tid, bool closing,
                          size_t& total) noexcept {
  trace::ChunkHeader header{trace::kChunkMagic, bytes, tid, trace::chunk_checksum(payload, bytes)};
  static constexpr trace::TraceClosedRecord kClosed{
      trace::header_for<trace::TraceClosedRecord>(sizeof(trace::TraceClosedRecord))};
  trace::ChunkHeader closed_header{trace::kChunkMagic, sizeof kClosed, tid,
                                   trace::chunk_checksum(&kClosed, sizeof kClosed)};
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
