#include <doctest/doctest.h>

#include <algorithm>
#include <cstring>

#include <stdlib.h>

#include <fstream>

#include "analysis.h"
#include "hand_made_trace.h"
#include "run_dir.h"
#include "trace_format.h"
#include "trace_reader.h"

using namespace cuaudit;
using namespace cuaudit::trace;
using namespace cuaudit::testing;

namespace {

std::string notice_record(NoticeCode code, const std::string& text) {
  NoticeRecord n{};
  n.code = static_cast<uint32_t>(code);
  n.text_bytes = static_cast<uint32_t>(text.size());
  const size_t bytes = padded_record_size(sizeof n + text.size());
  n.header = header_for<NoticeRecord>(bytes);
  std::string out;
  put(out, n);
  out += text;
  out.resize(bytes, '\0');
  return out;
}

}  // namespace

TEST_CASE("a foreign file is refused with a clear message") {
  CHECK_THROWS_WITH_AS(parse_trace("#!/bin/sh\necho hello\n", "x.cutrace"), doctest::Contains("is not a cuaudit trace"),
                       TraceError);
  CHECK_THROWS_AS(parse_trace("", "empty.cutrace"), TraceError);
}

TEST_CASE("a trace of another format version is refused, naming both versions") {
  CHECK_THROWS_WITH_AS(parse_trace(header(99), "new.cutrace"), doctest::Contains("version 99"), TraceError);
}

TEST_CASE("events of several chunks are merged in sequence order") {
  const auto t = parse_trace(
      header() + chunk(alloc_record(5, 0x50)) + chunk(alloc_record(2, 0x20) + alloc_record(9, 0x90)), "t.cutrace");
  REQUIRE(t.events.size() == 3);
  CHECK(t.events[0].memory().key == 0x20);
  CHECK(t.events[1].memory().key == 0x50);
  CHECK(t.events[2].memory().key == 0x90);
  CHECK(t.problems.empty());
  CHECK(t.pid == 77);
}

TEST_CASE("a truncated last chunk keeps what came before and says what was lost") {
  std::string bytes = header() + chunk(alloc_record(1, 0x10)) + chunk(alloc_record(2, 0x20));
  bytes.resize(bytes.size() - 10);
  const auto t = parse_trace(bytes, "t.cutrace");
  REQUIRE(t.events.size() == 1);
  CHECK(t.events[0].memory().key == 0x10);
  REQUIRE(t.problems.size() == 1);
  CHECK(t.problems[0].find("truncated") != std::string::npos);
}

TEST_CASE("garbage after the last chunk is reported, not fatal") {
  const auto t = parse_trace(header() + chunk(alloc_record(1, 0x10)) + std::string(40, 'x'), "t.cutrace");
  CHECK(t.events.size() == 1);
  CHECK(t.problems.size() == 1);
}

TEST_CASE("unknown record types from a newer writer are skipped, and counted") {
  std::string unknown;
  put(unknown, RecordHeader{999, 16, 0});
  put(unknown, uint64_t{0});
  const auto t = parse_trace(header() + chunk(unknown + alloc_record(1, 0x10)), "t.cutrace");
  CHECK(t.events.size() == 1);
  REQUIRE(t.problems.size() == 1);
  CHECK(t.problems[0].find("1 record(s) of a type this cuaudit does not know") != std::string::npos);
}

TEST_CASE("a chunk cut short keeps its complete records") {
  const std::string records = alloc_record(1, 0x10) + alloc_record(2, 0x20) + alloc_record(3, 0x30);
  std::string cut = header() + chunk(records);
  cut.resize(cut.size() - 10);  // the third record is cut
  const auto t = parse_trace(cut, "t.cutrace");
  CHECK(t.events.size() == 2);
  REQUIRE(t.problems.size() == 1);
  CHECK(t.problems[0].find("its 2 complete record(s) were read") != std::string::npos);
}

TEST_CASE("memory samples are read and ordered by sequence among the events") {
  MemorySampleRecord s{};
  s.header = {static_cast<uint16_t>(RecordType::MemorySample), sizeof s, 0};
  s.seq = 3;
  s.time_ns = 42;
  s.free_bytes = 70;
  s.total_bytes = 100;
  s.device = 1;
  std::string sample;
  put(sample, s);
  MemorySampleRecord earlier = s;
  earlier.seq = 1;
  std::string first;
  put(first, earlier);
  const auto t = parse_trace(header() + chunk(sample + alloc_record(2, 0x20)) + chunk(first), "t.cutrace");
  REQUIRE(t.samples.size() == 2);
  CHECK(t.samples[0].seq == 1);
  CHECK(t.samples[1].seq == 3);
  CHECK(t.samples[1].device == 1);
  CHECK(t.samples[1].total_bytes - t.samples[1].free_bytes == 30);
  CHECK(t.events.size() == 1);
}

TEST_CASE("Python stacks are read with their frames and attached to the allocation that follows") {
  const std::pair<std::string, std::string> names[] = {{"/venv/torch/nn/linear.py", "Linear.forward"},
                                                       {"train.py", "<module>"}};
  std::string tail;
  put(tail,
      PythonFrame{125, static_cast<uint16_t>(names[0].first.size()), static_cast<uint16_t>(names[0].second.size())});
  put(tail,
      PythonFrame{42, static_cast<uint16_t>(names[1].first.size()), static_cast<uint16_t>(names[1].second.size())});
  for (const auto& [file, function] : names) tail += file + function;
  PythonStackRecord r{};
  r.id = 0xabc;
  r.depth = 2;
  const size_t bytes = padded_record_size(sizeof r + tail.size());
  r.header = {static_cast<uint16_t>(RecordType::PythonStack), static_cast<uint16_t>(bytes), 0};
  std::string stack;
  put(stack, r);
  stack += tail;
  stack.resize(bytes, '\0');
  AllocPythonRecord link{};
  link.header = {static_cast<uint16_t>(RecordType::AllocPython), sizeof link, 0};
  link.seq = 4;
  link.python_stack_id = 0xabc;
  std::string linked;
  put(linked, link);
  const auto t =
      parse_trace(header() + chunk(stack + alloc_record(4, 0x40) + linked + alloc_record(5, 0x50)), "t.cutrace");
  REQUIRE(t.events.size() == 2);
  CHECK(t.events[0].memory().python_stack_id == 0xabc);
  CHECK(t.events[1].memory().python_stack_id == 0);
  REQUIRE(t.python_stacks.count(0xabc) == 1);
  const auto& frames = t.python_stacks.at(0xabc);
  REQUIRE(frames.size() == 2);
  CHECK(frames[0].file == "/venv/torch/nn/linear.py");
  CHECK(frames[0].function == "Linear.forward");
  CHECK(frames[1].line == 42);
  CHECK(frames[1].function == "<module>");
  CHECK(t.problems.empty());
}

TEST_CASE("kernel names and launch parameter facts are read") {
  const std::string name = "_Z6write4P6float4i";
  KernelRecord k{};
  k.kernel_id = 3;
  k.name_bytes = static_cast<uint32_t>(name.size());
  const size_t bytes = padded_record_size(sizeof k + name.size());
  k.header = {static_cast<uint16_t>(RecordType::Kernel), static_cast<uint16_t>(bytes), 0};
  std::string kernel;
  put(kernel, k);
  kernel += name;
  kernel.resize(bytes, '\0');
  LaunchParamRecord l{};
  l.header = {static_cast<uint16_t>(RecordType::LaunchParam), sizeof l, 0};
  l.seq = 8;
  l.value = 0x7004;
  l.kernel_id = 3;
  l.alignment = 16;
  l.param_index = 1;
  l.problem = static_cast<uint8_t>(LaunchProblem::Misaligned);
  l.path = static_cast<uint8_t>(LaunchPath::cuLaunchKernel);
  l.host_readable = 1;
  std::string launch;
  put(launch, l);
  const auto t = parse_trace(header() + chunk(kernel + launch), "t.cutrace");
  CHECK(t.kernels.at(3) == name);
  REQUIRE(t.events.size() == 1);
  const Event& e = t.events[0];
  CHECK(e.kind == EventKind::LaunchParam);
  CHECK(e.launch_param().value == 0x7004);
  CHECK(e.launch_param().alignment == 16);
  CHECK(e.launch_param().param_index == 1);
  CHECK(e.launch_param().path == static_cast<uint8_t>(LaunchPath::cuLaunchKernel));
  CHECK(e.launch_param().host_readable);
}

TEST_CASE("device states and call times are read, a state without NVML's answer says so") {
  DeviceStateRecord d{};
  d.header = header_for<DeviceStateRecord>(sizeof d);
  d.seq = 3;
  d.device = 1;
  d.flags = kStateAtFailedAllocation | kStateHasPool;
  d.pool_reserved = 64 << 20;
  d.pool_used = 16 << 20;
  std::string state;
  put(state, d);
  AllocRecord a{};
  a.header = header_for<AllocRecord>(sizeof a);
  a.seq = 2;
  a.key = 0x10;
  a.api = static_cast<uint16_t>(Api::cudaMalloc);
  a.call_ns = 1234;
  std::string alloc;
  put(alloc, a);
  const auto t = parse_trace(header() + chunk(alloc + state), "t.cutrace");
  REQUIRE(t.device_states.size() == 1);
  CHECK(t.device_states[0].at_failed_allocation);
  CHECK(t.device_states[0].pool_reserved == uint64_t{64 << 20});
  CHECK(t.device_states[0].pool_used == uint64_t{16 << 20});
  CHECK_FALSE(t.device_states[0].other_processes_bytes);
  REQUIRE(t.events.size() == 1);
  CHECK(t.events[0].memory().call_ns == 1234);
}

TEST_CASE("a flipped byte is a damaged chunk, reported, traces of version 1 have no checksum and are read") {
  std::string second = chunk(alloc_record(2, 0x20));
  second[sizeof(ChunkHeader) + 20] ^= 0x04;  // a bit of the record's key
  const auto t = parse_trace(header() + chunk(alloc_record(1, 0x10)) + second, "t.cutrace");
  CHECK(t.events.size() == 1);
  REQUIRE(t.problems.size() == 1);
  CHECK(t.problems[0].find("1 chunk(s) (72 bytes) failed their checksum") != std::string::npos);
  std::string old = chunk(process_record()) + chunk(alloc_record(1, 0x10));
  for (const size_t at : {size_t{0}, sizeof(ChunkHeader) + sizeof(ProcessInfoRecord)})
    old.replace(at + 12, 4, 4, '\0');  // version 1 wrote no checksum
  const auto v1 = parse_trace(file_header(1) + old, "v1.cutrace");
  CHECK(v1.events.size() == 1);
  CHECK(v1.problems.empty());
}

TEST_CASE("records the injection had to drop are damage: said, and the report is incomplete") {
  const std::string notice =
      notice_record(NoticeCode::DroppedEvents, "3 record(s) could not be written (no trace buffer or a failed write)");
  const auto t = parse_trace(header() + chunk(notice), "t.cutrace");
  REQUIRE(t.problems.size() == 1);
  CHECK(t.problems[0].find("3 record(s) could not be written") == 0);
  CHECK(t.notices.empty());
}

TEST_CASE("a stack record of depth 0 is an empty stack") {
  StackRecord r{};
  r.header = header_for<StackRecord>(sizeof r);
  r.id = 7;
  std::string stack;
  put(stack, r);
  const auto t = parse_trace(header() + chunk(stack), "t.cutrace");
  REQUIRE(t.stacks.count(7) == 1);
  CHECK(t.stacks.at(7).empty());
}

TEST_CASE("graph memory nodes, graph changes, graph launches and shared memory are read") {
  GraphMemNodeRecord n{};
  n.header = header_for<GraphMemNodeRecord>(sizeof n);
  n.seq = 1, n.stack_id = 5, n.graph = 0x70, n.node = 0x71, n.dptr = 0x7f00, n.bytes = 4096, n.device = 0;
  n.api = static_cast<uint16_t>(Api::cudaMallocAsyncCaptured);
  n.kind = static_cast<uint8_t>(GraphNodeKind::Alloc);
  GraphChangeRecord c{};
  c.header = header_for<GraphChangeRecord>(sizeof c);
  c.seq = 2, c.graph = 0x70, c.exec = 0x80, c.flags = kGraphAutoFreeOnLaunch;
  c.change = static_cast<uint32_t>(GraphChange::ExecCreated);
  GraphLaunchRecord l{};
  l.header = header_for<GraphLaunchRecord>(sizeof l);
  l.seq = 3, l.exec = 0x80, l.result = 0;
  SharedMemoryRecord s{};
  s.header = header_for<SharedMemoryRecord>(sizeof s);
  s.seq = 4, s.pointer = 0x7f00, s.handle_hash = 0x1234, s.role = static_cast<uint32_t>(SharedRole::Export);
  GraphChangeRecord unknown = c;  // a change a newer writer knows: skipped
  unknown.change = 99;
  std::string payload;
  put(payload, n), put(payload, c), put(payload, l), put(payload, s), put(payload, unknown);
  const auto t = parse_trace(header() + chunk(payload), "t.cutrace");
  REQUIRE(t.events.size() == 3);
  CHECK(t.events[0].kind == EventKind::GraphMemNode);
  CHECK(t.events[0].graph_node().api == Api::cudaMallocAsyncCaptured);
  CHECK(t.events[0].graph_node().alloc);
  CHECK(t.events[0].graph_node().bytes == 4096);
  CHECK(t.events[0].stack_id == 5);
  CHECK(t.events[1].graph_change().change == GraphChange::ExecCreated);
  CHECK(t.events[1].graph_change().flags == kGraphAutoFreeOnLaunch);
  CHECK(t.events[2].graph_launch().exec == 0x80);
  REQUIRE(t.shared_memory.size() == 1);
  CHECK(t.shared_memory[0].role == SharedRole::Export);
  CHECK(t.shared_memory[0].handle_hash == 0x1234);
}

TEST_CASE("a long run's memory samples are thinned to a bound, its peak kept") {
  std::string payload;
  const size_t n = kMaxSamples + 5000;
  for (size_t i = 0; i < n; ++i) {
    MemorySampleRecord s{};
    s.header = header_for<MemorySampleRecord>(sizeof s);
    s.seq = i + 1;
    s.time_ns = 1000 * (i + 1);
    s.total_bytes = 1000000;
    s.free_bytes = i == 12345 ? 1 : 500000;  // one sample sees the device almost full
    s.launches = i;
    put(payload, s);
  }
  const auto t = parse_trace(header() + chunk(payload), "t.cutrace");
  CHECK(t.samples.size() < kMaxSamples);
  CHECK(t.samples.size() + t.samples_thinned == n);
  CHECK(std::is_sorted(t.samples.begin(), t.samples.end(),
                       [](const MemorySample& a, const MemorySample& b) { return a.seq < b.seq; }));
  CHECK(std::any_of(t.samples.begin(), t.samples.end(), [](const MemorySample& s) { return s.free_bytes == 1; }));
  CHECK(t.samples.back().launches == n - 1);
}

TEST_CASE(
    "launch facts a writer never makes are not read: a misaligned value without its alignment, a word's unknown "
    "problem") {
  LaunchParamRecord l{};
  l.header = {static_cast<uint16_t>(RecordType::LaunchParam), sizeof l, 0};
  l.seq = 1;
  l.value = 0x7004;
  l.problem = static_cast<uint8_t>(LaunchProblem::Misaligned);  // alignment 0: the findings would divide by it
  LaunchBitsRecord w{};
  w.header = {static_cast<uint16_t>(RecordType::LaunchBits), sizeof w, 0};
  w.seq = 2;
  w.value = 0x7008;
  w.problem = static_cast<uint8_t>(LaunchProblem::Misaligned);  // words carry no alignment either
  LaunchBitsRecord stale = w;
  stale.seq = 3;
  stale.problem = static_cast<uint8_t>(LaunchProblem::NotAccessible);
  std::string bits;
  put(bits, w);
  put(bits, stale);
  std::string misaligned;
  put(misaligned, l);
  const auto t = parse_trace(header() + chunk(bits) + chunk(misaligned), "t.cutrace");
  REQUIRE(t.events.size() == 1);
  CHECK(t.events[0].launch_param().problem == LaunchProblem::NotAccessible);
  CHECK(t.events[0].launch_param().word);
  CHECK(t.problems.size() == 1);
}

namespace {
// A run directory of one trace (pid 77) whose process the launcher saw exit with status 0.
std::string run_dir_with(const std::string& trace_bytes) {
  char path[] = "/tmp/cuaudit-end-record-XXXXXX";
  REQUIRE(mkdtemp(path) != nullptr);
  std::ofstream(std::string(path) + "/trace-77.cutrace", std::ios::binary) << trace_bytes;
  RunInfo run;
  run.command = {"./app"};
  run.pid = 77;
  run.exit_code = 0;
  std::string error;
  REQUIRE(write_run_info(path, run, error));
  return path;
}
}  // namespace

TEST_CASE("a process that exited without an end record: cut (incomplete), unless cuaudit never subscribed") {
  // Events but no end record, although the launcher saw exit status 0: the trace was cut.
  const std::string cut = run_dir_with(header() + chunk(alloc_record(1, 0x10)));
  const report::Report damaged = analyze_run_dir(cut, AnalysisOptions{});
  CHECK(damaged.incomplete);
  remove_run_dir(cut);
  // Another CUPTI tool held the subscriber: the injection wrote its notice and stopped at once.
  const std::string unsubscribed =
      run_dir_with(header() + chunk(notice_record(NoticeCode::SubscribeFailed, "CUPTI error 39")));
  const report::Report r = analyze_run_dir(unsubscribed, AnalysisOptions{});
  CHECK_FALSE(r.incomplete);
  CHECK(r.nothing_tracked);
  remove_run_dir(unsubscribed);
}

TEST_CASE("a forked child that could not describe itself (no start time) comes after the processes that have one") {
  char path[] = "/tmp/cuaudit-order-XXXXXX";
  REQUIRE(mkdtemp(path) != nullptr);
  const std::string dir = path;
  ProcessInfoRecord info{};
  info.header = header_for<ProcessInfoRecord>(sizeof info);
  info.pid = 77;
  info.parent_pid = 1;
  info.start_realtime_ns = 1'700'000'000'000'000'000ull;
  std::string described;
  put(described, info);
  std::string child = file_header();
  child.replace(16, 8, std::string("\x05\0\0\0\0\0\0\0", 8));  // FileHeader::pid = 5, named trace-5
  std::ofstream(dir + "/trace-77.cutrace", std::ios::binary)
      << file_header() + chunk(described + alloc_record(1, 0x10));
  std::ofstream(dir + "/trace-5.cutrace", std::ios::binary) << child + chunk(alloc_record(1, 0x20));
  const report::Report r = analyze_run_dir(dir, AnalysisOptions{});
  REQUIRE(r.processes.size() == 2);
  CHECK(r.processes[0].pid == 77);
  CHECK(r.processes[1].pid == 5);
  remove_run_dir(dir);
}
