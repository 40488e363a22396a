// A long run's trace compacted while it runs (tool/compaction/, docs/LONG_RUNNING.md): read back,
// it leaves the same memory live with the same totals, and over a simulated week what the run keeps
// on disk follows what is live, not the events.
#include <doctest/doctest.h>

#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "compacted_file.h"
#include "hand_made_trace.h"
#include "paired_events.h"
#include "record_parser.h"
#include "replay.h"
#include "run_dir.h"
#include "synthetic_trace.h"
#include "temp_dir.h"
#include "trace_bytes.h"
#include "trace_compaction.h"
#include "trace_reader.h"

using namespace cuaudit;
using namespace cuaudit::trace;
using namespace cuaudit::testing;
namespace fs = std::filesystem;

namespace {

constexpr uint64_t kSecond = 1'000'000'000;

std::string memory_record(bool alloc, uint64_t seq, uint64_t key, uint64_t time_ns, int32_t result = 0) {
  ApiEventRecord r{};
  r.header = alloc ? header_for<AllocRecord>(sizeof(AllocRecord)) : header_for<FreeRecord>(sizeof(FreeRecord));
  r.seq = seq;
  r.time_ns = time_ns;
  r.key = key;
  r.bytes = alloc ? 4096 : 0;
  r.tid = 1;
  r.context_uid = 1;
  r.result = result;
  r.api = static_cast<uint16_t>(alloc ? Api::cudaMalloc : Api::cudaFree);
  std::string out;
  put(out, r);
  return out;
}

std::string sample_record(uint64_t seq, uint64_t time_ns, uint64_t free_bytes) {
  MemorySampleRecord r{};
  r.header = header_for<MemorySampleRecord>(sizeof r);
  r.seq = seq;
  r.time_ns = time_ns;
  r.free_bytes = free_bytes;
  r.total_bytes = 80ull << 30;
  std::string out;
  put(out, r);
  return out;
}

// A thread's chunk as the program would write it over `rounds`: `pairs` allocations each released
// at once, one kept for good (at key 0x9000'0000 + round), a sample.
struct Service {
  uint64_t seq = 1, time_ns = 1000, round = 0;
  std::string chunk(uint64_t pairs) {
    std::string payload;
    for (uint64_t i = 0; i < pairs; ++i) {
      payload += memory_record(true, seq++, 0x7000'0000 + i * 4096, time_ns += 1000);
      payload += memory_record(false, seq++, 0x7000'0000 + i * 4096, time_ns += 1000);
    }
    payload += memory_record(true, seq++, 0x9000'0000 + round * 4096, time_ns += 1000);
    payload += sample_record(seq++, time_ns, (70ull << 30) - round * 4096);
    ++round;
    return testing::chunk(payload);
  }
};

void append(const fs::path& file, const std::string& bytes) {
  std::ofstream(file, std::ios::binary | std::ios::app) << bytes;
}

ReplayResult replay_file(const fs::path& file) { return replay(TraceFile::open(file.string()).materialize()); }

uint64_t disk_bytes(const fs::path& file) {
  struct stat st;
  REQUIRE(stat(file.c_str(), &st) == 0);
  return static_cast<uint64_t>(st.st_blocks) * 512;
}

}  // namespace

TEST_CASE("a compacted trace leaves the same memory live, with the same totals, and goes on from its cut") {
  TempDir dir;
  const fs::path trace = dir.path / "trace-77.cutrace";
  Service service;
  append(trace, header());
  for (int i = 0; i < 3; ++i) append(trace, service.chunk(100));
  // Besides the pairs: a failed allocation, a release of memory never allocated, a double release.
  append(trace, chunk(memory_record(true, 9001, 0x5000, service.time_ns + 1, 2) +
                      memory_record(false, 9002, 0x6000, service.time_ns + 2, 1) +
                      memory_record(true, 9003, 0x7000, service.time_ns + 3) +
                      memory_record(false, 9004, 0x7000, service.time_ns + 4) +
                      memory_record(false, 9005, 0x7000, service.time_ns + 5, 1)));
  const ReplayResult whole = replay_file(trace);
  const uint64_t whole_bytes = fs::file_size(trace);

  const CompactionOutcome first = compact_trace(trace.string());
  REQUIRE(first.compacted);
  CHECK(first.cut == whole_bytes);
  CHECK(first.left_out == 2 * 300);  // the pairs; not the one the double release names
  CHECK(fs::file_size(compacted_trace_path(trace.string())) == first.compacted_bytes);
  CHECK(first.compacted_bytes < whole_bytes / 10);
  const TraceFile read = TraceFile::open(trace.string());
  REQUIRE(read.metadata().compaction);
  CHECK(read.metadata().compaction->allocations == 300);
  CHECK(read.metadata().problems.empty());
  const ReplayResult compacted = replay(read.materialize());
  CHECK(compacted.leaks.size() == whole.leaks.size());
  CHECK(compacted.leaks.size() == 3);
  CHECK(compacted.allocations + 300 == whole.allocations);
  CHECK(compacted.failed_allocations == whole.failed_allocations);
  // The release of memory never allocated and the double release, with the allocation and the
  // first release it names.
  REQUIRE(whole.release_findings.size() == 2);
  REQUIRE(compacted.release_findings.size() == 2);
  CHECK(compacted.release_findings[1].problem == ReleaseProblem::Double);
  CHECK(compacted.release_findings[1].first_release->seq == 9004);

  // The program goes on writing; the trace is read as the compacted file and what came after.
  append(trace, service.chunk(100));
  CHECK(replay_file(trace).leaks.size() == 4);
  CHECK(bytes_since_compaction(trace.string()) == fs::file_size(trace) - first.cut);
  const CompactionOutcome second = compact_trace(trace.string());
  REQUIRE(second.compacted);
  CHECK(second.cut == fs::file_size(trace));
  CHECK(replay_file(trace).leaks.size() == 4);
  CHECK(TraceFile::open(trace.string()).metadata().compaction->compactions == 2);
  CHECK(compact_trace(trace.string()).skipped == "nothing new since the last compaction");
  // The compacted file is not a process's trace of its own.
  CHECK(list_traces(dir.path.string()) == std::vector<std::string>{trace.string()});
}

TEST_CASE("over a simulated week, what the run keeps on disk follows what is live, not the events") {
  TempDir dir;
  const fs::path trace = dir.path / "trace-77.cutrace";
  Service service;
  append(trace, header());
  constexpr int kRounds = 168;  // one an hour for a week: 500 allocations and releases each
  uint64_t largest_compacted = 0, largest_on_disk = 0;
  for (int hour = 0; hour < kRounds; ++hour) {
    append(trace, service.chunk(500));
    service.time_ns += 3600 * kSecond;
    REQUIRE(compact_grown_traces(dir.path.string(), 1) == 1);
    largest_compacted = std::max<uint64_t>(largest_compacted, fs::file_size(compacted_trace_path(trace.string())));
    largest_on_disk = std::max(largest_on_disk, disk_bytes(trace));
  }
  const uint64_t written = fs::file_size(trace);
  const uint64_t round_bytes = written / kRounds;  // about 72 KiB
  MESSAGE("written " << written << " bytes; compacted file at most " << largest_compacted << ", trace on disk at most "
                     << largest_on_disk);
  // The compacted file holds the live allocations (one an hour) and the samples; the trace on disk
  // the last two rounds (the hole is punched one compaction late) and its first block.
  CHECK(largest_compacted < 200 * kRounds + 4096);
  CHECK(largest_on_disk <= 2 * round_bytes + 3 * 4096);
  const TraceFile read = TraceFile::open(trace.string());
  CHECK(read.metadata().problems.empty());
  const ReplayResult r = replay(read.materialize());
  CHECK(r.leaks.size() == kRounds);
  CHECK(r.allocations + read.metadata().compaction->allocations == kRounds * 501);
  CHECK(read.metadata().samples.size() == kRounds);
}

TEST_CASE("only the allocations released by a release of their own are paired") {
  constexpr uint64_t kGraph = 5, kExec = 6, kAddr = 0x7000'0000;
  SyntheticTrace t;
  t.alloc(Api::cudaMalloc, 0x1000, 64)
      .release(Api::cudaFree, 0x1000)      // paired
      .alloc(Api::cudaMalloc, 0x2000, 64)  // live at the end
      .alloc(Api::cudaMallocHost, 0x3000, 64)
      .release(Api::cudaFree, 0x3000)  // mismatched: both kept
      .graph_node(kGraph, kAddr, 4096, true, Api::cudaGraphAddMemAllocNode)
      .instantiate(kExec, kGraph)
      .launch_graph(kExec)
      .release(Api::cudaFree, kAddr);  // a graph's memory, freed by the program: no record made it
  const ProcessTrace& trace = t.trace();
  PairedEvents pairs;
  pair_events(
      trace,
      [&trace](const EventSink& sink) {
        for (const Event& e : trace.events) sink(e);
      },
      pairs);
  CHECK(pairs.paired() == 1);
  std::vector<uint64_t> kept;
  for (const Event& e : trace.events) {
    if (e.is_memory() && pairs.kept(e.seq)) kept.push_back(e.seq);
  }
  CHECK(kept.size() == 4);  // 0x2000, the mismatched pair, the graph memory's release
  CHECK_FALSE(pairs.kept(trace.events[0].seq));
  CHECK_FALSE(pairs.kept(trace.events[1].seq));
}

TEST_CASE("memory samples are thinned by merging neighbours, the higher use kept") {
  SampleThinning thinning(64);
  for (uint64_t i = 0; i < 1000; ++i) {
    const std::string r = sample_record(i, i * 1000, i == 617 ? 1 : 1000 + i % 7);
    thinning.add(r.data(), r.size());
  }
  const auto kept = thinning.kept();
  CHECK(kept.size() < 128);
  CHECK(kept.size() + thinning.left_out() == 1000);
  bool peak = false;
  for (const std::string& r : kept) peak |= load_unaligned<MemorySampleRecord>(r.data()).free_bytes == 1;
  CHECK(peak);
}

TEST_CASE("a compacted file of another trace is not read as its beginning") {
  TempDir dir;
  const fs::path trace = dir.path / "trace-77.cutrace";
  Service service;
  append(trace, header() + service.chunk(10));
  REQUIRE(compact_trace(trace.string()).compacted);
  // The trace made anew (a pid used again): its header's identity is another, the compacted file stale.
  std::string other = header();
  other[sizeof(FileHeader)] ^= 1;  // FileIdentity's first byte
  std::ofstream(trace, std::ios::binary | std::ios::trunc) << other;
  auto bytes = bytes_of_trace(trace.string());
  CHECK(bytes->size() == other.size());
}
