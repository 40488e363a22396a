// A chunk as the writer writes it, and the closing mark after it once exit began: read back with
// the real reader, the file ends closed only when the mark is its last chunk.
#include <doctest/doctest.h>
#include <fcntl.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

#include "chunk_write.h"
#include "trace_format.h"
#include "trace_reader.h"

using namespace cuaudit;

namespace {

struct TraceFileOnDisk {
  std::string dir, path;
  int fd = -1;
  static constexpr uint64_t kNonce = 0x5eed;
  TraceFileOnDisk() {
    char tmpl[] = "/tmp/cuaudit-chunk-XXXXXX";
    REQUIRE(mkdtemp(tmpl) != nullptr);
    dir = tmpl;
    path = dir + "/trace-77.cutrace";
    fd = open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0600);
    REQUIRE(fd >= 0);
    const trace::FileStart start = trace::file_start(77, kNonce);
    REQUIRE(write(fd, &start, sizeof start) == static_cast<ssize_t>(sizeof start));
  }
  ~TraceFileOnDisk() {
    close(fd);
    unlink(path.c_str());
    rmdir(dir.c_str());
  }
  void chunk(const void* record, uint32_t bytes, bool closing) {
    size_t total = 0;
    const uint64_t seal = trace::chunk_seal(trace::kTraceVersion, 77, kNonce, 5);
    const ssize_t written = inject::write_chunk_bytes(fd, record, bytes, 5, seal, closing, total);
    CHECK(written == static_cast<ssize_t>(total));
    CHECK(total == sizeof(trace::ChunkHeader) + bytes + (closing ? 24 : 0));
  }
};

trace::ProcessEndRecord end_record(uint64_t seq) {
  trace::ProcessEndRecord r{};
  r.header = trace::header_for<trace::ProcessEndRecord>(sizeof r);
  r.seq = seq;
  return r;
}

}  // namespace

TEST_CASE("the closing mark follows each chunk written once exit began, and only then") {
  TraceFileOnDisk file;
  const trace::ProcessEndRecord end = end_record(9), later = end_record(10), last = end_record(11);
  file.chunk(&end, sizeof end, /*closing=*/true);
  file.chunk(&later, sizeof later, /*closing=*/true);  // the same mark again: no repeated-chunk damage
  ProcessTrace closed = read_trace_file(file.path);
  CHECK(closed.reached_exit);
  REQUIRE(closed.ends_closed.has_value());
  CHECK(*closed.ends_closed);
  CHECK(closed.problems.empty());

  file.chunk(&last, sizeof last, /*closing=*/false);  // a chunk after the last mark: not closed
  const ProcessTrace open_ended = read_trace_file(file.path);
  REQUIRE(open_ended.ends_closed.has_value());
  CHECK_FALSE(*open_ended.ends_closed);
}
