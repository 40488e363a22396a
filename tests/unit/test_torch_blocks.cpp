// PyTorch's blocks (the torch-blocks-<pid>.json the Python hooks write at exit), replayed beside
// the process's samples: growth at the Python line that allocated them, with the cache on.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include "torch_blocks.h"

using namespace cuaudit;
using nlohmann::json;

namespace {

constexpr uint64_t kStartRealtimeNs = 1'796'000'000'000'000'000;
constexpr uint64_t kStartMonotonicNs = 5'000'000'000;
constexpr uint64_t kStepUs = 100'000;  // a training step every 100 ms
constexpr uint64_t kBlock = 4 << 20;

// A process that ran `steps` steps, one launch-counting sample after each.
ProcessTrace process(int steps) {
  ProcessTrace p;
  p.pid = 77;
  p.start_realtime_ns = kStartRealtimeNs;
  p.start_monotonic_ns = kStartMonotonicNs;
  p.reached_exit = true;
  for (int i = 0; i <= steps; ++i) {
    MemorySample s;
    s.seq = static_cast<uint64_t>(i + 1) * 10;
    s.time_ns = kStartMonotonicNs + static_cast<uint64_t>(i) * kStepUs * 1000 + 50'000'000;
    s.launches = static_cast<uint64_t>(i) * 100;
    p.samples.push_back(s);
  }
  return p;
}

uint64_t step_us(int step) { return kStartRealtimeNs / 1000 + static_cast<uint64_t>(step) * kStepUs + 10'000; }

// Every step allocates its activations at train.py:19 and a temporary at train.py:20 (freed in the
// step); `keep` keeps the activations to the end, as a list of them would.
json blocks_file(int steps, bool keep) {
  json frames = json::array({json::array({json::array({"/home/me/train.py", 19, "<module>"})}),
                             json::array({json::array({"/home/me/train.py", 20, "<module>"})})});
  json events = json::array(), live = json::array();
  for (int step = 0; step < steps; ++step) {
    const uint64_t act = 0x7f0000000000 + static_cast<uint64_t>(step) * kBlock;
    const uint64_t tmp = 0x7e0000000000;
    events.push_back({0, 1, act, kBlock, 0, step_us(step), 1});
    events.push_back({0, 1, tmp, 1024, 0, step_us(step) + 10, 2});
    events.push_back({0, 0, tmp, 1024, 0, step_us(step) + 20, 0});
    if (keep) {
      live.push_back({0, act, kBlock, 1});
    } else {
      events.push_back({0, 0, act, kBlock, 0, step_us(step) + 30, 0});
    }
  }
  return {{"format", "cuaudit-torch-blocks"},
          {"version", 1},
          {"pid", 77},
          {"max_entries", 100000},
          {"frames", frames},
          {"live", live},
          {"events", events}};
}

}  // namespace

TEST_CASE("blocks become a trace of their own, in time order with the process's samples") {
  std::vector<std::string> notes;
  const ProcessTrace t = torch_block_trace(blocks_file(3, true).dump(), process(3), notes);
  CHECK(t.pid == 77);
  CHECK(t.python_stacks.size() == 2);
  CHECK(t.python_stacks.at(1).front().line == 19);
  size_t allocs = 0;
  uint64_t last_seq = 0;
  for (const Event& e : t.events) {
    CHECK(e.seq > last_seq);
    last_seq = e.seq;
    if (e.kind == EventKind::Alloc) {
      ++allocs;
      CHECK(e.memory().api == Api::torchBlockAlloc);
      CHECK(e.memory().time_ns >= kStartMonotonicNs);
    }
  }
  CHECK(allocs == 6);
  CHECK(t.samples.size() == 4);
  REQUIRE(notes.size() == 1);
  CHECK(notes[0] ==
        "PyTorch's caching allocator: 6 block allocation(s) and 3 free(s) seen in its memory history; 3 "
        "block(s) still allocated at exit");
}

TEST_CASE("activations kept in a list grow at their line with the cache on; a correct loop does not") {
  for (bool keep : {true, false}) {
    CAPTURE(keep);
    const std::string dir = "/tmp/cuaudit-torch-blocks-test";
    REQUIRE(system(("mkdir -p " + dir).c_str()) == 0);
    FILE* f = fopen((dir + "/torch-blocks-77.json").c_str(), "w");
    REQUIRE(f);
    fputs(blocks_file(12, keep).dump().c_str(), f);
    fclose(f);
    const ProcessTrace p = process(12);
    report::Timeline timeline;
    for (const MemorySample& s : p.samples) {
      report::TimelineSample ts;
      ts.pid = 77;
      ts.t = p.seconds_since_start(s.time_ns);
      timeline.samples.push_back(ts);
    }
    // What the segments alone said (the caching allocator's frames): replaced by the blocks' finding.
    report::Finding segments;
    segments.kind = report::FindingKind::Growth;
    report::Frame frame;
    frame.function = "c10::cuda::CUDACachingAllocator::Native::DeviceCachingAllocator::malloc(...)";
    segments.stack = {frame};
    std::vector<report::Finding> findings = {segments};
    std::vector<std::string> notes;
    Symbolizer symbolizer;
    analyze_torch_blocks(dir, p, symbolizer, findings, notes, timeline);
    if (keep) {
      REQUIRE(findings.size() == 1);
      CHECK(findings[0].kind == report::FindingKind::Growth);
      CHECK(findings[0].api == "CUDACachingAllocator::malloc");
      CHECK(findings[0].count == 12);
      CHECK(findings[0].bytes == 12 * kBlock);
      REQUIRE(!findings[0].stack.empty());
      CHECK(findings[0].stack[0].file == "/home/me/train.py");
      CHECK(findings[0].stack[0].line == 19);
      REQUIRE(timeline.samples.back().blocks);
      CHECK(*timeline.samples.back().blocks == 12 * kBlock);
    } else {
      CHECK(findings.empty());
      REQUIRE(timeline.samples.back().blocks);
      CHECK(*timeline.samples.back().blocks == 0);
    }
  }
}

TEST_CASE("a malformed blocks file is said in the notes, and the segments' findings stay") {
  const std::string dir = "/tmp/cuaudit-torch-blocks-bad";
  REQUIRE(system(("mkdir -p " + dir).c_str()) == 0);
  FILE* f = fopen((dir + "/torch-blocks-77.json").c_str(), "w");
  REQUIRE(f);
  fputs("{\"format\": \"something else\"}", f);
  fclose(f);
  std::vector<report::Finding> findings(1);
  findings[0].kind = report::FindingKind::Growth;
  std::vector<std::string> notes;
  report::Timeline timeline;
  Symbolizer symbolizer;
  analyze_torch_blocks(dir, process(2), symbolizer, findings, notes, timeline);
  CHECK(findings.size() == 1);
  REQUIRE(notes.size() == 1);
  CHECK(notes[0].find("could not be read (not a cuaudit-torch-blocks file of version 1)") != std::string::npos);
}
