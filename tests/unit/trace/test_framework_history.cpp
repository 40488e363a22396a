// PyTorch's history (the torch-blocks-<pid>.json the Python hooks write at exit) as events of its
// pool, merged by time into the process's one replay: growth at the Python line that allocated
// the blocks, with the cache on; the segments they lie in; its out-of-memory entries.
#include <doctest/doctest.h>

#include <algorithm>

#include <nlohmann/json.hpp>

#include "error_findings.h"
#include "framework_history.h"
#include "growth_findings.h"
#include "oom_findings.h"
#include "pool_heaps.h"
#include "python_frames.h"
#include "python_hooks.h"
#include "replay.h"
#include "symbolizer.h"
#include "timeline.h"
#include "trace_reader.h"

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

// The out-of-memory check on `p` (all its events in memory).
std::vector<report::Finding> out_of_memory_findings(const ProcessTrace& p) {
  Symbolizer symbolizer;
  StackResolver stacks(p, symbolizer);
  CallSiteJudge site_judge;
  FailureJudge failures(p, stacks, site_judge);
  std::set<uint64_t> explained;
  return oom_findings(p, stacks, failures, explained);
}

}  // namespace

TEST_CASE("the history becomes events of PyTorch's pool in time order, its stacks the process's") {
  std::vector<std::string> notes;
  ProcessTrace p = process(3);
  p.pools[1] = PoolInfo{MemorySource::NvtxHeap, "mine", 0, 0, 0, 0};
  const FrameworkHistory h = framework_history(kTorchBlocksFile, blocks_file(3, true).dump(), p, notes);
  REQUIRE(p.pools.count(2) == 1);  // the next number after the trace's own pools
  CHECK(p.pools.at(2).kind == MemorySource::TorchCaching);
  CHECK(p.python_stacks.size() == 2);
  size_t allocs = 0;
  uint64_t last_ns = 0;
  for (const Event& e : h.events) {
    CHECK(e.time_ns >= last_ns);
    last_ns = e.time_ns;
    if (e.kind == EventKind::Alloc) {
      ++allocs;
      CHECK(e.memory().api == Api::torchBlockAlloc);
      CHECK(e.memory().pool == 2);
      CHECK(e.memory().time_ns >= kStartMonotonicNs);
      REQUIRE(p.python_stacks.count(e.memory().python_stack_id) == 1);
      CHECK(p.python_stacks.at(e.memory().python_stack_id).front().line >= 19);
    }
  }
  CHECK(allocs == 6);
  CHECK(h.any_block);
  REQUIRE(notes.size() == 1);
  CHECK(notes[0] ==
        "PyTorch's caching allocator: 6 block allocation(s) and 3 free(s) seen in its memory history; 3 "
        "block(s) still allocated at exit");
}

TEST_CASE("merged by time: each history event just before the first sample or event after it") {
  ProcessTrace p = process(3);  // samples at seq 10, 20, 30, 40
  std::vector<std::string> notes;
  const FrameworkHistory h = framework_history(kTorchBlocksFile, blocks_file(3, true).dump(), p, notes);
  const std::vector<Event> merged = merge_by_time(p, h.events);
  REQUIRE(merged.size() == h.events.size());
  // Step 0's blocks (10 ms in) come before the first sample (50 ms in), with its seq.
  CHECK(merged.front().seq == 10);
  CHECK(merged.front().memory().seq == 10);
  uint64_t last = 0;
  for (const Event& e : merged) {
    CHECK(e.seq >= last);
    last = e.seq;
  }
}

TEST_CASE("activations kept in a list grow at their line with the cache on, a correct loop does not") {
  for (bool keep : {true, false}) {
    CAPTURE(keep);
    ProcessTrace p = process(12);
    std::vector<std::string> notes;
    const FrameworkHistory h = framework_history(kTorchBlocksFile, blocks_file(12, keep).dump(), p, notes);
    p.events = merge_by_time(p, h.events);
    Symbolizer symbolizer;
    StackResolver stacks(p, symbolizer);
    const ReplayResult result = replay(p);
    // Blocks of a framework's pool still handed out at exit are what Python still holds: not leaks.
    CHECK(result.leaks.size() == (keep ? 12u : 0u));
    const std::vector<report::Finding> findings = growth_findings(p, result.leaks, stacks);
    report::Timeline timeline;
    build_timeline(p, stacks, timeline);
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

TEST_CASE("version 2: segments live in the pool's heap, out-of-memory entries are kept") {
  json doc = blocks_file(2, true);
  doc["version"] = 2;
  const uint64_t t0 = step_us(0) - 5;
  doc["events"].insert(doc["events"].begin(), json::array({0, 2, 0x7f0000000000, 64 * kBlock, 0, t0, 0}));
  doc["events"].push_back({0, 6, 0x1000, 96 * kBlock, 0, step_us(1) + 50, 0});  // addr: the device's free bytes
  doc["segments"] =
      json::array({json::array({0, 0x7f0000000000, 64 * kBlock}), json::array({0, 0x7d0000000000, kBlock})});
  ProcessTrace p = process(2);
  std::vector<std::string> notes;
  const FrameworkHistory h = framework_history(kTorchBlocksFile, doc.dump(), p, notes);
  size_t segments = 0;
  for (const Event& e : h.events) segments += e.kind == EventKind::PoolSegment;
  CHECK(segments == 2);  // the one seen allocated, and the one allocated before the history
  REQUIRE(p.framework_ooms.size() == 1);
  CHECK(p.framework_ooms[0].requested == 96 * kBlock);
  CHECK(p.framework_ooms[0].device_free == 0x1000);
  REQUIRE(notes.size() == 1);
  CHECK(notes[0].find("; 2 segment(s) reserved from CUDA; 1 out-of-memory error(s) it raised") != std::string::npos);

  ReplayResult result;
  PoolHeaps heaps(result, nullptr, &p.pools);
  for (const Event& e : h.events) {
    if (e.kind == EventKind::PoolSegment) heaps.segment(e.pool_segment());
    if (e.is_memory()) heaps.apply(e.memory());
  }
  const PoolUsage u = heaps.usage(1);  // the trace had no pool of its own
  CHECK(u.reserved == 65 * kBlock);
  CHECK(u.used == 2 * kBlock);
  CHECK(u.segments == 2);
  CHECK(heaps.framework_block_bytes(0) == 2 * kBlock);
}

TEST_CASE("a malformed history is said in the notes and changes nothing, with the cache off there is no pool") {
  const std::string dir = "/tmp/cuaudit-torch-history-bad";
  REQUIRE(system(("mkdir -p " + dir).c_str()) == 0);
  FILE* f = fopen((dir + "/torch-blocks-77.json").c_str(), "w");
  REQUIRE(f);
  fputs("{\"format\": \"something else\"}", f);
  fclose(f);
  std::vector<std::string> notes;
  ProcessTrace p = process(2);
  CHECK_FALSE(load_framework_history(kTorchBlocksFile, dir, p, notes));
  CHECK(p.pools.empty());
  REQUIRE(notes.size() == 1);
  CHECK(notes[0].find("could not be read (not a cuaudit-torch-blocks file of version 1 to 2)") != std::string::npos);

  json off = blocks_file(0, false);  // no block at all: PyTorch's cache was off
  notes.clear();
  const FrameworkHistory h = framework_history(kTorchBlocksFile, off.dump(), p, notes);
  CHECK_FALSE(h.any_block);
  CHECK(h.events.empty());
  CHECK(p.pools.empty());
}

TEST_CASE(
    "a file is kept in memory only as far as it is what the hooks write (F12): unknown keys skipped, rows bounded") {
  const auto zeros = [](int n) {
    std::string out = "0";
    for (int i = 1; i < n; ++i) out += ",0";
    return out;
  };
  // An unknown key's big list is skipped as it is parsed: the history reads as without it.
  const json plain = blocks_file(2, true);
  std::string padded = plain.dump();
  padded.insert(1, "\"padding\": [" + zeros(100000) + ", 0.5], ");
  std::vector<std::string> notes;
  ProcessTrace p = process(2), q = process(2);
  const FrameworkHistory h = framework_history(kTorchBlocksFile, padded, p, notes);
  CHECK(h.any_block);
  CHECK(framework_history(kTorchBlocksFile, plain.dump(), q, notes).events.size() == h.events.size());
  // A list of numbers where rows belong, or a row longer than any the hooks write: refused at once.
  const std::string head = R"({"format": "cuaudit-torch-blocks", "version": 2, "events": )";
  const std::string fraction = R"({"format": "cuaudit-torch-blocks", "version": 2.1e98})";
  for (const std::string& bad :
       {head + "[0, 0]}", head + "[[" + zeros(70000) + "]]}", head + "[[0, 1.5e99]]}", fraction}) {
    ProcessTrace r = process(2);
    CHECK_THROWS_AS(framework_history(kTorchBlocksFile, bad, r, notes), std::runtime_error);
    CHECK(r.pools.empty());
  }
}

TEST_CASE("PyTorch's own out-of-memory error: one finding at its Python line, with a failing cudaMalloc, that one") {
  json doc = blocks_file(2, true);
  doc["version"] = 2;
  doc["events"].insert(doc["events"].begin(), json::array({0, 2, 0x7f0000000000, 64 * kBlock, 0, step_us(0) - 5, 0}));
  doc["events"].push_back({0, 6, 0x1000, 96 * kBlock, 0, step_us(1) + 50, 1});  // asked at train.py:19
  for (bool cuda_failed : {false, true}) {
    CAPTURE(cuda_failed);
    ProcessTrace p = process(2);
    for (MemorySample& s : p.samples) s.total_bytes = 80ull << 30, s.free_bytes = 70ull << 30;
    std::vector<std::string> notes;
    const FrameworkHistory h = framework_history(kTorchBlocksFile, doc.dump(), p, notes);
    p.events = merge_by_time(p, h.events);
    if (cuda_failed) {  // the cudaMalloc PyTorch tried first, from the same line (the injection's own stack id)
      p.python_stacks[5] = {{"/home/me/train.py", 19, "<module>"}, {"/usr/lib/python3/runpy.py", 80, "_run"}};
      Event e;
      e.kind = EventKind::Alloc;
      e.time_ns = kStartMonotonicNs + kStepUs * 1000 + 10'000'000;
      e.seq = 19;
      e.stack_id = 3;
      MemoryEvent m;
      m.seq = e.seq, m.time_ns = e.time_ns, m.api = Api::cudaMalloc, m.bytes = 96 * kBlock, m.result = 2;
      m.device = 0, m.stack_id = 3, m.python_stack_id = 5;
      e.payload = m;
      p.events.push_back(e);
      std::stable_sort(p.events.begin(), p.events.end(), [](const Event& a, const Event& b) { return a.seq < b.seq; });
    }
    const std::vector<report::Finding> ooms = out_of_memory_findings(p);
    REQUIRE(ooms.size() == 1);
    REQUIRE(ooms[0].out_of_memory);
    REQUIRE_FALSE(ooms[0].stack.empty());
    CHECK(ooms[0].stack[0].file == "/home/me/train.py");
    CHECK(ooms[0].stack[0].line == 19);
    if (cuda_failed) {
      CHECK(ooms[0].api == "cudaMalloc");
      bool raised = false;
      for (const std::string& n : ooms[0].notes)
        raised |= n.find("raised its out-of-memory error for it") != std::string::npos;
      CHECK(raised);
    } else {
      CHECK(ooms[0].api == "CUDACachingAllocator::malloc");
      CHECK(ooms[0].out_of_memory->verdict.find("PyTorch's CUDA caching allocator refused it itself") == 0);
    }
  }
}

TEST_CASE("what the Python hooks did becomes the process's notes") {
  const std::string text = R"({"format": "cuaudit-python-hooks", "version": 1, "pid": 7, "hooks": {
      "torch": {"state": "off", "why": "PYTORCH_NO_CUDA_MEMORY_CACHING is set"},
      "cupy": {"state": "attached", "threads": 3}}})";
  const std::vector<std::string> notes = python_hooks_notes(text);
  REQUIRE(notes.size() == 2);
  CHECK(notes[0] == "CuPy's memory hook: attached on 3 thread(s) (the importing thread and those started after it)");
  CHECK(notes[1] == "PyTorch's memory history: off (PYTORCH_NO_CUDA_MEMORY_CACHING is set)");
  CHECK(python_hooks_notes(R"({"format": "cuaudit-python-hooks", "version": 1, "hooks": {"cupy": {"state": "failed",
      "why": "cuaudit's injection library is not loaded"}}})")
            .front() ==
        "CuPy's memory hook did not attach: cuaudit's injection library is not loaded; its blocks "
        "are not followed");
  CHECK(python_hooks_notes(R"({"format": "cuaudit-python-hooks", "version": 1, "hooks": {"cupy": {"threads": 1}}})")
            .front() == "CuPy's memory hook: installed on 1 thread(s), but CuPy's memory pool handed out no block");
  CHECK(python_hooks_notes(R"j({"format": "cuaudit-python-hooks", "version": 1, "hooks": {"jax": {"state": "attached",
      "interval_ms": 50, "why": "uncaught out-of-memory errors only (Python before 3.12 has no sys.monitoring)"}}})j")
            .front() ==
        "JAX's live arrays: listed every 50 ms, at out-of-memory errors and at exit (uncaught "
        "out-of-memory errors only (Python before 3.12 has no sys.monitoring))");
  CHECK_THROWS(python_hooks_notes(R"({"format": "other"})"));
}

namespace {

// JAX's file: the same steps as a list of live arrays at intervals, and an out-of-memory error at
// train.py:19 with XLA's figures (8 GiB it may hold, `in_use` in use, `largest_free` its largest block).
json jax_file(int steps, uint64_t requested, uint64_t in_use, uint64_t largest_free) {
  json doc = blocks_file(steps, true);
  doc["format"] = "cuaudit-jax-arrays";
  doc["version"] = 1;
  doc["written_at"] = "exit";
  doc["events"].push_back({0, 6, 0, requested, 0, step_us(steps - 1) + 50, 1, 8ull << 30, in_use, largest_free});
  return doc;
}

OomFacts xla_facts(uint64_t requested, uint64_t in_use, uint64_t largest_free) {
  OomFacts x;
  x.requested = requested;
  x.total = 141ull << 30, x.free = 20ull << 30;
  x.refused_by = "XLA's GPU allocator";
  x.allocator_limit = 8ull << 30, x.allocator_in_use = in_use, x.allocator_largest_free = largest_free;
  return x;
}

}  // namespace

TEST_CASE("JAX's arrays: XLA's pool, growth at the line that keeps them, its out-of-memory error with XLA's figures") {
  ProcessTrace p = process(12);
  for (MemorySample& s : p.samples) s.total_bytes = 141ull << 30, s.free_bytes = 20ull << 30;
  std::vector<std::string> notes;
  const FrameworkHistory h =
      framework_history(kJaxArraysFile, jax_file(12, 2ull << 30, 7ull << 30, 512 << 20).dump(), p, notes);
  REQUIRE(p.pools.size() == 1);
  CHECK(p.pools.begin()->second.kind == MemorySource::XlaBfc);
  REQUIRE(notes.size() == 1);
  CHECK(notes[0].find("XLA's GPU allocator (JAX): 24 block allocation(s) and 12 free(s) seen in JAX's live arrays") ==
        0);
  CHECK(notes[0].find("1 out-of-memory error(s) it raised") != std::string::npos);
  p.events = merge_by_time(p, h.events);
  Symbolizer symbolizer;
  StackResolver stacks(p, symbolizer);
  const ReplayResult result = replay(p);
  const std::vector<report::Finding> growth = growth_findings(p, result.leaks, stacks);
  REQUIRE(growth.size() == 1);
  CHECK(growth[0].api == "BFCAllocator::AllocateRaw");
  // XLA says nothing of where its blocks lie: without its statistics, no reserve to chart, its
  // blocks in the allocated bytes.
  report::Timeline timeline;
  build_timeline(p, stacks, timeline);
  CHECK(timeline.pool_series.empty());
  REQUIRE(timeline.samples.back().blocks);
  CHECK(*timeline.samples.back().blocks == 12 * kBlock);
  // With its statistics at each listing, the pool's own figures are charted: 8 GiB reserved, what
  // its arrays held, its largest free block.
  json with_stats = jax_file(12, 2ull << 30, 7ull << 30, 512 << 20);
  with_stats["stats"] = json::array();
  for (int step = 0; step < 12; ++step) {
    with_stats["stats"].push_back({0, step_us(step) + 5, 8ull << 30, static_cast<uint64_t>(step + 1) * kBlock,
                                   (8ull << 30) - (step + 1) * kBlock});
  }
  ProcessTrace q = process(12);
  std::vector<std::string> q_notes;
  q.events = merge_by_time(q, framework_history(kJaxArraysFile, with_stats.dump(), q, q_notes).events);
  StackResolver q_stacks(q, symbolizer);
  report::Timeline charted;
  build_timeline(q, q_stacks, charted);
  REQUIRE(charted.pool_series.size() == 1);
  const report::PoolSeries& xla = charted.pool_series[0];
  CHECK(xla.pool == "XLA's GPU allocator");
  REQUIRE_FALSE(xla.reserved.empty());
  CHECK(xla.reserved.back() == (8ull << 30));
  CHECK(xla.used.back() == 12 * kBlock);
  CHECK(xla.largest_free.back() == (8ull << 30) - 12 * kBlock);
  REQUIRE_FALSE(growth[0].stack.empty());
  CHECK(growth[0].stack[0].line == 19);

  const std::vector<report::Finding> ooms = out_of_memory_findings(p);
  REQUIRE(ooms.size() == 1);
  REQUIRE(ooms[0].out_of_memory);
  const report::OutOfMemoryState& o = *ooms[0].out_of_memory;
  CHECK(o.verdict == "the program's arrays filled XLA's GPU allocator (7.0 GiB of the 8.0 GiB it may hold in use)");
  CHECK(o.allocator_limit == (8ull << 30));
  CHECK(o.allocator_largest_free == (512u << 20));
  REQUIRE_FALSE(ooms[0].stack.empty());
  CHECK(ooms[0].stack[0].line == 19);
  // The top holder is the line that keeps the arrays, by its Python line.
  const auto holder_at =
      std::find_if(ooms[0].related.begin(), ooms[0].related.end(),
                   [](const report::RelatedStack& r) { return r.role == report::RelatedRole::Holder; });
  REQUIRE(holder_at != ooms[0].related.end());
  const report::RelatedStack& holder = *holder_at;
  CAPTURE(holder.title);
  CHECK(holder.title.find("held 48.0 MiB in 12 block(s) (BFCAllocator::AllocateRaw)") != std::string::npos);
  REQUIRE_FALSE(holder.stack.empty());
  CHECK(holder.stack[0].line == 19);
}

TEST_CASE("XLA's refusal: too large for all it may hold, fragmentation inside it, or the arrays filled it") {
  CHECK(oom_verdict(xla_facts(9ull << 30, 1ull << 30, 7ull << 30))
            .find("the request alone is larger than all it may "
                  "hold (8.0 GiB") != std::string::npos);
  CHECK(oom_verdict(xla_facts(2ull << 30, 4ull << 30, 1ull << 30)) ==
        "free memory was enough in total inside XLA's GPU allocator (4.0 GiB free) but its largest free block "
        "was 1.0 GiB: fragmentation inside the allocator");
  CHECK(oom_verdict(xla_facts(2ull << 30, 7ull << 30, 1ull << 30)).find("the program's arrays filled") == 0);
  // Without the allocator's figures, PyTorch's refusal keeps its own verdict.
  OomFacts torch = xla_facts(2ull << 30, 0, 0);
  torch.allocator_limit = 0;
  CHECK(oom_verdict(torch).find("refused it itself") != std::string::npos);
}

TEST_CASE("the Python hooks' own frames (cuaudit_hooks.py and its framework modules) are left out of stacks") {
  ProcessTrace p;
  p.python_stacks[1] = {{"/opt/cuaudit/lib/cuaudit_site/cuaudit_hooks_cupy.py", 88, "malloc_postprocess"},
                        {"/opt/cuaudit/lib/cuaudit_site/cuaudit_hooks.py", 12, "install"},
                        {"/home/me/cuaudit_site/cuaudit_hooks_mine/train.py", 5, "step"},
                        {"/home/me/train.py", 19, "<module>"}};
  const std::vector<report::Frame> frames = python_frames(p, 1);
  REQUIRE(frames.size() == 2);
  CHECK(frames[0].file == "/home/me/cuaudit_site/cuaudit_hooks_mine/train.py");
  CHECK(frames[1].line == 19);
}

TEST_CASE("PyTorch's and JAX's files in one process: each keeps its own Python stacks and pool") {
  ProcessTrace p = process(4);
  std::vector<std::string> notes;
  json torch = blocks_file(4, true);
  json jax = jax_file(4, 2ull << 30, 7ull << 30, 512 << 20);
  jax["frames"] = json::array({json::array({json::array({"/home/me/model.py", 7, "<module>"})}),
                               json::array({json::array({"/home/me/model.py", 8, "<module>"})})});
  const FrameworkHistory t = framework_history(kTorchBlocksFile, torch.dump(), p, notes);
  const FrameworkHistory j = framework_history(kJaxArraysFile, jax.dump(), p, notes);
  REQUIRE(p.pools.size() == 2);
  CHECK(p.python_stacks.size() == 4);
  auto line_of = [&](const FrameworkHistory& h) {
    for (const Event& e : h.events) {
      if (e.kind == EventKind::Alloc && e.memory().python_stack_id)
        return p.python_stacks.at(e.memory().python_stack_id)[0];
    }
    return PythonFrameInfo{};
  };
  CHECK(line_of(t).file == "/home/me/train.py");
  CHECK(line_of(j).file == "/home/me/model.py");
}

TEST_CASE("a file written while the program ran says when, and that later blocks are not seen") {
  ProcessTrace p = process(6);
  json doc = blocks_file(6, true);
  doc["written_at"] = "running";
  doc["written_us"] = step_us(3);  // 0.31 s after the process started
  std::vector<std::string> notes;
  framework_history(kTorchBlocksFile, doc.dump(), p, notes);
  REQUIRE(notes.size() == 1);
  CHECK(notes[0].find("still allocated when the hooks last wrote the file while the program ran at 0.3 s (blocks "
                      "handed out or taken back after are not seen") != std::string::npos);
  doc["written_at"] = "exit";
  notes.clear();
  ProcessTrace q = process(6);
  framework_history(kTorchBlocksFile, doc.dump(), q, notes);
  CHECK(notes[0].find("still allocated at exit") != std::string::npos);
}
