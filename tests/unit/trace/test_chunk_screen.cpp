// A chunk that is not the process's own is set aside and said (tool/trace/chunk_screen.h; the
// reliability review of 2026-12-04, F6), and copies of a trace are found by their chunks.
#include <doctest/doctest.h>

#include <stdlib.h>

#include <algorithm>

#include <fstream>

#include "analysis.h"
#include "chunk_screen.h"
#include "hand_made_trace.h"
#include "run_dir.h"
#include "trace_bytes.h"
#include "trace_reader.h"

using namespace cuaudit;
using namespace cuaudit::trace;
using namespace cuaudit::testing;

namespace {

bool says(const ProcessTrace& t, const std::string& text) {
  for (const std::string& p : t.problems) {
    if (p.find(text) != std::string::npos) return true;
  }
  return false;
}

std::string signal_record(uint64_t seq) {
  SignalRecord r{};
  r.header = header_for<SignalRecord>(sizeof r);
  r.seq = seq;
  r.signal = 11;
  std::string out;
  put(out, r);
  return out;
}

// A process that began at 10 s and made three allocations on two threads.
const std::string kStart = file_header() + chunk(process_record(77, 10'000'000'000));
const std::string kFirst = chunk(alloc_record(1, 0x10, 11'000'000'000) + alloc_record(3, 0x30, 11'000'000'300), 1);
const std::string kSecond = chunk(alloc_record(2, 0x20, 11'000'000'200), 2);

std::string with_tid(std::string chunk_bytes, uint32_t tid) {
  memcpy(&chunk_bytes[8], &tid, sizeof tid);  // ChunkHeader::tid: outside the checksum
  return chunk_bytes;
}

}  // namespace

TEST_CASE("sequence numbers: a set of bits by page, that stops remembering past its page limit") {
  SeenSequences seen(2);
  CHECK(seen.insert(5));
  CHECK(seen.insert(4095));
  CHECK(seen.contains(5));
  CHECK_FALSE(seen.contains(6));
  CHECK(seen.insert(SeenSequences::kPageBits * 9));  // a second page
  CHECK_FALSE(seen.full());
  CHECK_FALSE(seen.insert(SeenSequences::kPageBits * 20));  // a third: over the limit
  CHECK(seen.full());
  CHECK_FALSE(seen.contains(SeenSequences::kPageBits * 20));
  CHECK(seen.contains(SeenSequences::kPageBits * 9));
}

TEST_CASE("the intact trace is read whole and says nothing") {
  const ProcessTrace t = parse_trace(kStart + kFirst + kSecond, "t.cutrace");
  CHECK(t.problems.empty());
  CHECK(t.events.size() == 3);
}

TEST_CASE("a chunk written again under another thread id: its checksum fails (version 7), read once before") {
  for (const std::string& bytes :
       {kStart + kFirst + kSecond + with_tid(kFirst, 9), kStart + kFirst + with_tid(kFirst, 2) + kSecond}) {
    const ProcessTrace t = parse_trace(bytes, "t.cutrace");
    CHECK(t.events.size() == 3);
    CHECK(says(t, "1 chunk(s) (144 bytes) failed their checksum"));
  }
  // Version 6 sealed nothing: the repeat is found by its records, whatever its header says.
  const std::string v6 = file_header(6) + chunk(process_record(77, 10'000'000'000), 1, 77, 6);
  const std::string first = chunk(alloc_record(1, 0x10, 11'000'000'000), 1, 77, 6);
  const ProcessTrace t = parse_trace(v6 + first + with_tid(first, 9), "t.cutrace");
  CHECK(t.events.size() == 1);
  CHECK(says(t, "1 chunk(s) repeat an earlier chunk's records byte for byte"));
}

TEST_CASE("a chunk whose sequence numbers were read already is another's (version 6: no seal), set aside") {
  const std::string v6 = file_header(6) + chunk(process_record(77, 10'000'000'000), 1, 77, 6);
  const std::string mine =
      chunk(alloc_record(1, 0x10, 11'000'000'000) + alloc_record(2, 0x20, 11'000'000'100), 1, 77, 6);
  const std::string other = chunk(alloc_record(2, 0x99, 12'000'000'000), 3, 77, 6);  // another run's seq 2
  const ProcessTrace t = parse_trace(v6 + mine + other, "t.cutrace");
  CHECK(t.events.size() == 2);
  CHECK(says(t, "1 chunk(s) (1 event(s)) are not the process's own"));
  CHECK(says(t, "1 carry sequence numbers already read"));
}

TEST_CASE("a chunk that began before the process did is another trace's, even with new sequence numbers") {
  const std::string older = chunk(alloc_record(7, 0x70, 5'000'000'000), 1);
  const ProcessTrace t = parse_trace(kStart + kFirst + older + kSecond, "t.cutrace");
  CHECK(t.events.size() == 3);
  CHECK(says(t, "1 began before the process did"));
  // Within a second of the start is the process's own: a forked child's first event opens its
  // trace just before the child describes itself.
  const std::string just_before = chunk(alloc_record(7, 0x70, 9'500'000'000), 1);
  const ProcessTrace child = parse_trace(kStart + kFirst + just_before, "t.cutrace");
  CHECK(child.problems.empty());
  CHECK(child.events.size() == 3);
}

TEST_CASE("a set-aside chunk's samples are taken back out") {
  MemorySampleRecord sample{};
  sample.header = header_for<MemorySampleRecord>(sizeof sample);
  sample.seq = 4;
  sample.time_ns = 11'000'000'400;
  std::string s;
  put(s, sample);
  sample.time_ns += 1;  // another run's sample 4
  std::string other;
  put(other, sample);
  const std::string v6 = file_header(6) + chunk(process_record(77, 10'000'000'000), 1, 77, 6);
  const ProcessTrace t = parse_trace(v6 + chunk(s, 3, 77, 6) + chunk(other, 4, 77, 6), "t.cutrace");
  REQUIRE(t.samples.size() == 1);
  CHECK(t.samples[0].time_ns == 11'000'000'400);
  CHECK(says(t, "1 chunk(s) (0 event(s)) are not the process's own"));
}

TEST_CASE("a chunk of another file fails its checksum, though its pid and thread id are the same (version 7)") {
  std::string other = kSecond;
  const uint32_t checksum = chunk_checksum(other.data() + sizeof(ChunkHeader), other.size() - sizeof(ChunkHeader),
                                           chunk_seal(kTraceVersion, 77, kNonce + 1, 2));
  memcpy(&other[12], &checksum, sizeof checksum);  // sealed by a file of another nonce
  const ProcessTrace t = parse_trace(kStart + kFirst + other, "t.cutrace");
  CHECK(t.events.size() == 2);
  CHECK(says(t, "failed their checksum"));
}

TEST_CASE("a trace holds one process record: none (its first chunk lost) or two (another's chunks) is counted") {
  const ProcessTrace lost = parse_trace(file_header() + kFirst + kSecond, "t.cutrace");
  CHECK(lost.events.size() == 3);
  CHECK(lost.record_counts.process_records == 0);
  CHECK(lost.record_counts.program_events == 3);
  const ProcessTrace two = parse_trace(kStart + kFirst + chunk(process_record(78)) + kSecond, "t.cutrace");
  CHECK(two.record_counts.process_records == 2);
  // A forked child whose first event was its crash could not describe itself: not damage.
  const ProcessTrace crashed = parse_trace(file_header() + chunk(signal_record(1)), "t.cutrace");
  CHECK(crashed.record_counts.program_events == 0);
  // An event naming a stack no record of the trace holds.
  AllocRecord r{};
  r.header = header_for<AllocRecord>(sizeof r);
  r.seq = 4, r.time_ns = 11'000'000'400, r.stack_id = 0x5eed, r.api = static_cast<uint16_t>(Api::cudaMalloc);
  std::string named;
  put(named, r);
  const ProcessTrace stackless = parse_trace(kStart + kFirst + chunk(named), "t.cutrace");
  CHECK(stackless.record_counts.unrecorded_stacks == 1);
  CHECK(stackless.record_counts.unrecorded_stack_events == 1);
}

TEST_CASE("no process record, two, or events naming unrecorded stacks: said of a finished run, not of a snapshot") {
  char path[] = "/tmp/cuaudit-records-XXXXXX";
  REQUIRE(mkdtemp(path) != nullptr);
  const std::string dir = path;
  std::ofstream(dir + "/trace-77.cutrace", std::ios::binary) << file_header() + kFirst + kSecond;
  const report::Report finished = analyze_run_dir(dir, AnalysisOptions{});
  CHECK(finished.incomplete);
  REQUIRE(finished.processes.size() == 1);
  const auto& notes = finished.processes[0].notes;
  CHECK(std::any_of(notes.begin(), notes.end(),
                    [](const std::string& n) { return n.find("events but no process record") != std::string::npos; }));
  AnalysisOptions snapshot;
  snapshot.snapshot = true;  // a running process: its first chunk may not be written yet
  const report::Report running = analyze_run_dir(dir, snapshot);
  REQUIRE(running.processes.size() == 1);
  const auto& now = running.processes[0].notes;
  CHECK(std::none_of(now.begin(), now.end(),
                     [](const std::string& n) { return n.find("no process record") != std::string::npos; }));
  remove_run_dir(dir);
}

TEST_CASE("a copy of a trace whose process record was changed or lost is found by its chunks of events") {
  char path[] = "/tmp/cuaudit-copies-XXXXXX";
  REQUIRE(mkdtemp(path) != nullptr);
  const std::string dir = path;
  std::ofstream(dir + "/trace-77.cutrace", std::ios::binary) << kStart + kFirst + kSecond;
  // The start moved by 1 ns: another process to the pid-and-start rule alone (a reused pid).
  std::ofstream(dir + "/trace-77.1.cutrace", std::ios::binary)
      << file_header() + chunk(process_record(77, 10'000'000'001)) + kFirst + kSecond;
  const report::Report r = analyze_run_dir(dir, AnalysisOptions{});
  CHECK(r.processes.size() == 1);
  CHECK(r.incomplete);
  REQUIRE_FALSE(r.notes.empty());
  CHECK(r.notes.back().find("is a second trace of process 77") != std::string::npos);
  // A pid reused later: other events, so another process, read beside the first.
  std::ofstream(dir + "/trace-77.1.cutrace", std::ios::binary)
      << file_header() + chunk(process_record(77, 90'000'000'000)) +
             chunk(alloc_record(1, 0x10, 95'000'000'000) + alloc_record(2, 0x20, 95'000'000'100));
  const report::Report reused = analyze_run_dir(dir, AnalysisOptions{});
  CHECK(reused.processes.size() == 2);
  remove_run_dir(dir);
}

TEST_CASE("trace bytes: a file read piece by piece reads zeros once it was replaced, memory as given") {
  char path[] = "/tmp/cuaudit-bytes-XXXXXX";
  REQUIRE(mkdtemp(path) != nullptr);
  const std::string file = std::string(path) + "/t.cutrace";
  std::ofstream(file, std::ios::binary) << "abcdefgh";
  const std::unique_ptr<TraceBytes> bytes = bytes_of_file(file);
  CHECK(bytes->size() == 8);
  CHECK(std::string(bytes->read(2, 3), 3) == "cde");
  bytes->rest();
  std::ofstream(file + ".new", std::ios::binary) << "ABCDEFGH";
  REQUIRE(std::rename((file + ".new").c_str(), file.c_str()) == 0);  // another file under the name
  CHECK(std::string(bytes->read(2, 3), 3) == std::string(3, '\0'));
  CHECK(std::string(bytes_in_memory("xyz")->read(1, 2), 2) == "yz");
  CHECK_THROWS_AS(bytes_of_file(std::string(path) + "/none"), TraceError);
  remove_run_dir(path);
}
