// Live memory by site over a run (SiteHistory), the native growth rule over its shapes, and what a
// snapshot of a running program calls what it holds.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <string>

#include "leak_findings.h"
#include "option_words.h"
#include "output_path.h"
#include "site_growth_findings.h"
#include "site_history.h"
#include "symbolizer.h"
#include "synthetic_trace.h"
#include "text_report.h"

using namespace cuaudit;
using cuaudit::testing::SyntheticTrace;

namespace {

constexpr uint64_t MiB = 1 << 20;
constexpr uint64_t kSecond = 1'000'000'000;

std::vector<uint64_t> ramp(size_t n, uint64_t step, uint64_t base = 0) {
  std::vector<uint64_t> v;
  for (size_t i = 0; i < n; ++i) v.push_back(base + step * i);
  return v;
}

// A service running `seconds`: every 100 ms a request allocates and frees a scratch buffer
// (stack 1) and keeps `kept` bytes (stack 2, never released).
SyntheticTrace service(int seconds, uint64_t kept) {
  SyntheticTrace t;
  uint64_t next_kept = 0x700000000000;
  for (int request = 0; request < seconds * 10; ++request) {
    t.alloc(Api::cudaMalloc, 0x100000000, 64 * MiB, 1).release(Api::cudaFree, 0x100000000);
    if (kept) t.alloc(Api::cudaMalloc, next_kept += kept, kept, 2);
    t.wait(100'000'000);
  }
  return t;
}

}  // namespace

TEST_CASE("growth rule: a steady climb grows, at its rate") {
  const GrowthShape s = judge_growth(ramp(40, 2 * MiB), 0.5);  // +2 MiB every 0.5 s
  CHECK(s.growing);
  CHECK(s.bytes_per_second == doctest::Approx(4.0 * MiB));
}

TEST_CASE("growth rule: warm-up, phases, noise and short histories are not growth") {
  std::vector<uint64_t> warmup = ramp(10, 10 * MiB);
  warmup.resize(40, warmup.back());  // grows in its first quarter, then level
  CHECK_FALSE(judge_growth(warmup, 1).growing);
  std::vector<uint64_t> phases;
  for (int phase = 0; phase < 4; ++phase) {
    for (uint64_t x : ramp(10, 10 * MiB, phase * MiB)) phases.push_back(x);  // each phase falls back to the start
  }
  CHECK_FALSE(judge_growth(phases, 1).growing);
  CHECK_FALSE(judge_growth(ramp(40, 1000), 1).growing);  // 39 KB in all: not worth a finding
  CHECK_FALSE(judge_growth(ramp(7, 10 * MiB), 1).growing);
}

TEST_CASE("the history keeps at most 128 buckets, doubling their width as the run goes on") {
  SyntheticTrace run = service(60, MiB);
  const ProcessTrace& t = run.end().trace();
  SiteHistory h(t);
  replay(t, &h);
  h.finish();
  CHECK(h.buckets() <= SiteHistory::kMaxBuckets);
  CHECK(h.bucket_ns() == SiteHistory::kFirstBucketNs * 8);  // 60 s: 600 buckets of 100 ms -> 75 of 800 ms
  REQUIRE(h.sites().size() == 2);
  for (const auto& [key, site] : h.sites()) {
    const std::vector<uint64_t> v = h.series(site);
    if (key.stack_id == 2) {
      CHECK(site.count() == 600);
      CHECK(v.back() == 600 * MiB);
      CHECK(std::is_sorted(v.begin(), v.end()));
    } else {
      CHECK(site.count() == 0);
      CHECK(*std::max_element(v.begin(), v.end()) == 0);  // released within each request
    }
  }
}

TEST_CASE("a service keeping a buffer per request: one growth finding, at that site, with its rate") {
  SyntheticTrace run = service(60, MiB);
  const ProcessTrace& t = run.end().trace();
  SiteHistory h(t);
  replay(t, &h);
  h.finish();
  Symbolizer symbolizer;
  StackResolver stacks(t, symbolizer);
  const auto findings = site_growth_findings(t, h, stacks);
  REQUIRE(findings.size() == 1);
  const report::Finding& f = findings[0];
  CHECK(f.kind == report::FindingKind::Growth);
  CHECK(f.severity == report::Severity::Warning);
  REQUIRE(f.growth);
  CHECK(f.growth->bytes_per_hour == doctest::Approx(36000.0 * MiB).epsilon(0.02));  // 10 MiB a second
  CHECK(f.headline.find("GiB per hour at one site (cudaMalloc): 600.0 MiB live in 600 allocation(s)") !=
        std::string::npos);
  CHECK(f.count == 600);

  SyntheticTrace level_run = service(60, 0);
  const ProcessTrace& level = level_run.end().trace();
  SiteHistory flat(level);
  replay(level, &flat);
  flat.finish();
  CHECK(site_growth_findings(level, flat, stacks).empty());

  SyntheticTrace brief_run = service(10, MiB);  // 10 s: too short to call growth
  const ProcessTrace& brief = brief_run.end().trace();
  SiteHistory short_run(brief);
  replay(brief, &short_run);
  short_run.finish();
  CHECK(site_growth_findings(brief, short_run, stacks).empty());
}

TEST_CASE("a snapshot of a running program: what it holds is live, not leaked") {
  SyntheticTrace running;
  const ProcessTrace& t = running.alloc(Api::cudaMalloc, 0x1000, 4096).trace();
  Replayer replayer(t, nullptr);
  for (const Event& e : t.events) replayer.apply(e);
  const ReplayResult r = replayer.finish(LeakEnd::StillRunning);
  Symbolizer symbolizer;
  StackResolver stacks(t, symbolizer);
  const auto findings = leak_findings(t, r, stacks, testing::no_holders());
  REQUIRE(findings.size() == 1);
  CHECK(findings[0].kind == report::FindingKind::Live);
  CHECK(findings[0].severity == report::Severity::Info);
  CHECK(findings[0].headline.rfind("Live: 4096 byte(s) in 1 allocation(s) (cudaMalloc)", 0) == 0);
  report::Report snapshot;
  report::Process p;
  p.pid = t.pid;
  snapshot.processes.push_back(p);
  snapshot.findings = findings;
  snapshot.summary = report::summarize(snapshot.findings);
  const std::string text = report::render_text(snapshot, {});
  CHECK(text.find("LIVE SUMMARY: 4096 byte(s) live in 1 allocation(s) from 1 site(s) (still running)") !=
        std::string::npos);
  CHECK(text.find("LEAK SUMMARY: 0 byte(s) leaked") != std::string::npos);
}

TEST_CASE("snapshot files are numbered before the extension, durations read as users write them") {
  CHECK(numbered_path("out/report.json", "snapshot-2") == "out/report.snapshot-2.json");
  CHECK(numbered_path("out.d/report", "snapshot-1") == "out.d/report.snapshot-1");
  CHECK(numbered_path(".hidden", "snapshot-1") == ".hidden.snapshot-1");
  CHECK(parse_duration_ms("10s") == 10'000u);
  CHECK(parse_duration_ms("10m") == 600'000u);
  CHECK(parse_duration_ms("1.5h") == 5'400'000u);
  CHECK(parse_duration_ms("250ms") == 250u);
  CHECK(parse_duration_ms("90") == 90'000u);
  CHECK_FALSE(parse_duration_ms("ten minutes"));
  CHECK_FALSE(parse_duration_ms("10 days"));
  CHECK_FALSE(parse_duration_ms("-5s"));
}

TEST_CASE("a snapshot, or a process killed, shows a framework pool's blocks live at the Python line that holds them") {
  SyntheticTrace running;
  const ProcessTrace& t = running.alloc(Api::cudaMalloc, 0x10000, 1 << 20)
                              .pool(1, "PyTorch's caching allocator", MemorySource::TorchCaching)
                              .python_stack(7, {{"/home/me/train.py", 12, "<module>"}})
                              .block(Api::torchBlockAlloc, 1, 0x10000, 4096, 0)
                              .trace();
  const_cast<ProcessTrace&>(t).events.back().memory().python_stack_id = 7;  // the block's Python stack
  Replayer replayer(t, nullptr);
  for (const Event& e : t.events) replayer.apply(e);
  Symbolizer symbolizer;
  StackResolver stacks(t, symbolizer);
  const auto live = leak_findings(t, replayer.finish(LeakEnd::StillRunning), stacks, testing::no_holders());
  const auto block = std::find_if(live.begin(), live.end(), [](const report::Finding& f) { return f.bytes == 4096; });
  REQUIRE(block != live.end());
  CHECK(block->kind == report::FindingKind::Live);
  REQUIRE_FALSE(block->stack.empty());
  CHECK(block->stack[0].file == "/home/me/train.py");
  CHECK(block->stack[0].line == 12);

  // Killed (SIGKILL): the same blocks, live when it died, as the hooks last wrote them.
  Replayer killed(t, nullptr);
  for (const Event& e : t.events) killed.apply(e);
  const auto died = leak_findings(t, killed.finish(LeakEnd::ProcessDied), stacks, testing::no_holders());
  const auto kept = std::find_if(died.begin(), died.end(), [](const report::Finding& f) { return f.bytes == 4096; });
  REQUIRE(kept != died.end());
  CHECK(kept->kind == report::FindingKind::Live);
  CHECK(kept->headline.rfind("Live when the process died:", 0) == 0);
  CHECK(kept->stack[0].line == 12);
}

TEST_CASE("watch mode: a site's live bytes and count are its samples' estimates, unsampled memory is in no site") {
  SyntheticTrace t;
  t.sampled_stacks(64 * 1024, MiB);
  for (uint64_t i = 0; i < 100; ++i) t.alloc(Api::cudaMalloc, 0x100000 + i * 0x1000, 4096, i < 10 ? 5 : 0);
  t.alloc(Api::cudaMalloc, 0x9000000, 2 * MiB, 6);
  t.release(Api::cudaFree, 0x100000);  // a sampled one released: its whole estimate goes with it
  const ProcessTrace& trace = t.end().trace();
  SiteHistory h(trace);
  replay(trace, &h);
  h.finish();
  REQUIRE(h.sites().size() == 2);
  const double weight = 1.0 / -std::expm1(-4096.0 / 65536.0);  // 16.5: each sampled 4 KiB stands for so many
  for (const auto& key_site : h.sites()) {
    const auto& key = key_site.first;  // not a structured binding: CAPTURE's lambda takes it (clang)
    const auto& site = key_site.second;
    CAPTURE(key.stack_id);
    if (key.stack_id == 5) {
      CHECK(site.bytes == static_cast<uint64_t>(9 * std::llround(4096 * weight)));
      CHECK(site.count() == static_cast<uint64_t>(std::llround(9 * weight)));
    } else {
      CHECK(key.stack_id == 6);
      CHECK(site.bytes == 2 * MiB);  // exact
      CHECK(site.count() == 1);
    }
  }
}

namespace {

// PyTorch's cache: a 20 MiB segment made for line 12, a block of line 12 and two of line 30 in it,
// one of those back in the cache; the program's own 2 MiB beside it. With `give_back`, every
// block is freed and the segment returned to CUDA.
SyntheticTrace torch_pool(bool give_back) {
  SyntheticTrace t;
  t.pool(1, "PyTorch's caching allocator", MemorySource::TorchCaching)
      .python_stack(7, {{"/home/me/train.py", 12, "<module>"}})
      .python_stack(8, {{"/home/me/train.py", 30, "<module>"}});
  t.alloc_from_python(Api::cudaMalloc, 0x10000000, 20 * MiB, 7, 3);
  t.segment(1, 0x10000000, 20 * MiB);
  for (uint64_t i = 0; i < 3; ++i) {
    t.block(Api::torchBlockAlloc, 1, 0x10000000 + i * 4 * MiB, 4 * MiB, trace::kNoStack);
    const_cast<ProcessTrace&>(t.trace()).events.back().memory().python_stack_id = i == 0 ? 7 : 8;
  }
  t.block(Api::torchBlockFree, 1, 0x10000000 + 4 * MiB);
  t.alloc(Api::cudaMalloc, 0x20000000, 2 * MiB, 4);
  if (give_back) {
    t.block(Api::torchBlockFree, 1, 0x10000000).block(Api::torchBlockFree, 1, 0x10000000 + 8 * MiB);
    t.segment(1, 0x10000000, 20 * MiB, false).release(Api::cudaFree, 0x10000000);
  }
  return t.end();
}

std::map<std::string, uint64_t> held_by_site(const ProcessTrace& trace) {
  SiteHistory h(trace);
  replay(trace, &h);
  h.finish();
  std::map<std::string, uint64_t> held;
  for (const auto& [key, site] : h.sites()) {
    const std::string name = key.is_reserve()      ? "reserve"
                             : key.python_stack_id ? "python " + std::to_string(key.python_stack_id)
                                                   : "stack " + std::to_string(key.stack_id);
    held[name] += site.bytes;
  }
  return held;
}

}  // namespace

TEST_CASE("a pool's blocks count at their own sites, what it reserved and has not handed out at one site of its own") {
  SyntheticTrace running = torch_pool(false);
  std::map<std::string, uint64_t> held = held_by_site(running.trace());
  CHECK(held["python 7"] == 4 * MiB);  // the block, not the 20 MiB segment made for that line
  CHECK(held["python 8"] == 4 * MiB);
  CHECK(held["reserve"] == 12 * MiB);  // 20 MiB reserved, 8 MiB handed out
  CHECK(held["stack 4"] == 2 * MiB);
  uint64_t total = 0;
  for (const auto& [name, bytes] : held) total += bytes;
  CHECK(total == 22 * MiB);  // every byte once

  SyntheticTrace ended = torch_pool(true);  // the pool gave its segment back: only the program's own is left
  held = held_by_site(ended.trace());
  for (const auto& [name, bytes] : held) CHECK(bytes == (name == "stack 4" ? 2 * MiB : 0));
}

TEST_CASE("what each site allocated over the run, pinned host memory included, a pool's segments at its cache") {
  SyntheticTrace t = torch_pool(true);
  t.alloc(Api::cudaMallocHost, 0x7f0000000000, 1 * MiB, 5).alloc(Api::cudaMallocHost, 0x7f0000200000, 1 * MiB, 5);
  t.release(Api::cudaFreeHost, 0x7f0000000000).end();
  SiteHistory h(t.trace());
  replay(t.trace(), &h);
  h.finish();
  std::map<std::string, std::pair<uint64_t, uint64_t>> allocated;  // name -> count, bytes
  std::map<std::string, int32_t> device;
  for (const auto& [key, site] : h.sites()) {
    const std::string name =
        key.is_reserve()      ? "reserve"
        : key.python_stack_id ? std::string(api_info(key.api).name) + " python " + std::to_string(key.python_stack_id)
                              : "stack " + std::to_string(key.stack_id);
    allocated[name].first += site.allocated_count();
    allocated[name].second += site.allocated_bytes;
    device[name] = key.device;
  }
  CHECK(allocated["CUDACachingAllocator::malloc python 7"] == std::make_pair(uint64_t{1}, 4 * MiB));
  CHECK(allocated["CUDACachingAllocator::malloc python 8"] == std::make_pair(uint64_t{2}, 8 * MiB));
  // The segment's cudaMalloc counts at the pool's cache, not at the line it was made for.
  CHECK(allocated["cudaMalloc python 7"] == std::make_pair(uint64_t{0}, uint64_t{0}));
  CHECK(allocated["reserve"] == std::make_pair(uint64_t{1}, 20 * MiB));
  CHECK(allocated["stack 4"] == std::make_pair(uint64_t{1}, 2 * MiB));
  CHECK(allocated["stack 5"] == std::make_pair(uint64_t{2}, 2 * MiB));
  CHECK(device["stack 5"] == trace::kHostDevice);
  CHECK(device["stack 4"] == 0);
  for (const auto& [key, site] : h.sites()) {
    if (key.stack_id == 5) CHECK(site.bytes == 1 * MiB);  // one of the two pinned buffers is still held
  }
}
