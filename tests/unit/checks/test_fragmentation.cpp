// Pools cut into holes (tool/checks/fragmentation_findings.h): a request that did not fit in a
// pool's free memory although enough was free, so that the pool grew, on hand-made layouts.
#include <doctest/doctest.h>

#include "fragmentation_findings.h"
#include "oom_findings.h"
#include "symbolizer.h"
#include "synthetic_trace.h"
#include "timeline.h"

using namespace cuaudit;
using cuaudit::testing::SyntheticTrace;

namespace {

constexpr uint64_t kKiB = 1024, kMiB = 1024 * kKiB;
constexpr uint64_t kFirst = 0x10000000, kSecond = 0x20000000;

// The layouts below miss once: the rule that a pool must keep missing is tested on its own.
FragmentationOptions once(double threshold_percent = 30) {
  FragmentationOptions o;
  o.threshold_percent = threshold_percent;
  o.min_misses = 1;
  o.min_miss_spread = 0;
  return o;
}

std::vector<report::Finding> judge(const ProcessTrace& trace, FragmentationOptions options = once()) {
  Symbolizer symbolizer;
  StackResolver stacks(trace, symbolizer);
  return fragmentation_findings(trace, stacks, options);
}

// CuPy's pool with one 1 MiB segment handed out as four 256 KiB blocks (stack 5); `returned`
// says which of them were given back (bit i: block i).
SyntheticTrace pool_with_holes(unsigned returned) {
  SyntheticTrace t;
  t.pool(2, "", MemorySource::CupyPool).segment(2, kFirst, kMiB);
  for (uint64_t i = 0; i < 4; ++i) t.block(Api::cupyPoolMalloc, 2, kFirst + i * 256 * kKiB, 256 * kKiB, 5);
  for (uint64_t i = 0; i < 4; ++i) {
    if (returned & (1u << i)) t.block(Api::cupyPoolFree, 2, kFirst + i * 256 * kKiB);
  }
  return t;
}

}  // namespace

TEST_CASE("a request that fits in no hole although enough is free, and the pool grows: fragmentation") {
  // Blocks 0 and 2 given back: 512 KiB free in two holes of 256 KiB, 50% fragmented.
  SyntheticTrace t = pool_with_holes(0b0101);
  t.segment(2, kSecond, kMiB).block(Api::cupyPoolMalloc, 2, kSecond, 384 * kKiB, 6);
  const auto findings = judge(t.trace());
  REQUIRE(findings.size() == 1);
  const report::Finding& f = findings[0];
  CHECK(f.kind == report::FindingKind::Fragmentation);
  CHECK(f.severity == report::Severity::Warning);
  CHECK(f.api == "MemoryPool.malloc");
  CHECK(f.count == 1);
  REQUIRE(f.fragmentation);
  const report::FragmentationStats& s = *f.fragmentation;
  CHECK(s.pool == "CuPy's memory pool");
  CHECK(s.requested == 384 * kKiB);
  CHECK(s.reserved == kMiB);
  CHECK(s.used == 512 * kKiB);
  CHECK(s.free == 512 * kKiB);
  CHECK(s.largest_free == 256 * kKiB);
  CHECK(s.ratio == doctest::Approx(0.5));
  CHECK(s.grew_by == kMiB);
  CHECK(s.request_sizes == std::vector<uint64_t>{384 * kKiB});
  // The live blocks between the holes, by site: both from stack 5.
  REQUIRE(!f.related.empty());
  CHECK(f.related[0].role == report::RelatedRole::Holder);
  CHECK(f.related[0].title.find("512.0 KiB in 2 live block(s)") == 0);
  CHECK(f.headline.find("fragmentation 50%") != std::string::npos);
}

TEST_CASE("no fragmentation: a full pool that grows, a request bigger than all that is free, one that fits a hole") {
  // Nothing given back: the pool is simply full.
  SyntheticTrace full = pool_with_holes(0);
  full.segment(2, kSecond, kMiB).block(Api::cupyPoolMalloc, 2, kSecond, 256 * kKiB);
  CHECK(judge(full.trace()).empty());
  // 512 KiB free, 768 KiB asked: not enough free in total, the pool must grow.
  SyntheticTrace short_of_memory = pool_with_holes(0b0101);
  short_of_memory.segment(2, kSecond, kMiB).block(Api::cupyPoolMalloc, 2, kSecond, 768 * kKiB);
  CHECK(judge(short_of_memory.trace()).empty());
  // Blocks 1 and 2 given back: one 512 KiB hole; a pool that grows anyway for 384 KiB did not
  // miss for lack of a hole.
  SyntheticTrace one_hole = pool_with_holes(0b0110);
  one_hole.segment(2, kSecond, kMiB).block(Api::cupyPoolMalloc, 2, kSecond, 384 * kKiB);
  CHECK(judge(one_hole.trace()).empty());
  // The request after the growth landed elsewhere (in a hole): the growth was not for it.
  SyntheticTrace elsewhere = pool_with_holes(0b0101);
  elsewhere.segment(2, kSecond, kMiB).block(Api::cupyPoolMalloc, 2, kFirst, 256 * kKiB);
  CHECK(judge(elsewhere.trace()).empty());
}

TEST_CASE("free memory spread over segments each smaller than the request is not a miss (PyTorch's warm-up)") {
  // Four 1 MiB segments, each with 768 KiB free in one hole: 3 MiB free in all, but a 1.5 MiB
  // request fits in no segment however its holes lay: the pool must grow (ResNet-50 on the H200:
  // 650 MiB free in 84 segments, 73.5 MiB asked).
  SyntheticTrace t;
  t.pool(2, "", MemorySource::TorchCaching);
  for (uint64_t i = 0; i < 4; ++i) {
    t.segment(2, kFirst + i * 0x1000000, kMiB).block(Api::torchBlockAlloc, 2, kFirst + i * 0x1000000, 256 * kKiB, 5);
  }
  const uint64_t third = 0x30000000;
  t.segment(2, third, 2 * kMiB).block(Api::torchBlockAlloc, 2, third, 1536 * kKiB, 6);
  CHECK(judge(t.trace()).empty());
  // The same request with one 2 MiB segment half free in two holes: that is a miss.
  SyntheticTrace cut;
  cut.pool(2, "", MemorySource::TorchCaching).segment(2, kFirst, 2 * kMiB);
  cut.block(Api::torchBlockAlloc, 2, kFirst + 512 * kKiB, 512 * kKiB, 5)
      .block(Api::torchBlockAlloc, 2, kFirst + 1536 * kKiB, 512 * kKiB, 5);
  cut.segment(2, third, 2 * kMiB).block(Api::torchBlockAlloc, 2, third, 768 * kKiB, 6);
  CHECK(judge(cut.trace()).size() == 1);
}

TEST_CASE("what a framework's rounding leaves after each block is not a hole to miss in") {
  // 2000 blocks of 512 - 100 bytes asked, each at a 512-byte step: 200,000 bytes of slack and no
  // hole; a 64 KiB request then needs a new segment, rightly.
  SyntheticTrace t;
  t.pool(2, "", MemorySource::CupyPool).segment(2, kFirst, 2000 * 512);
  for (uint64_t i = 0; i < 2000; ++i) t.block(Api::cupyPoolMalloc, 2, kFirst + i * 512, 412);
  t.segment(2, kSecond, kMiB).block(Api::cupyPoolMalloc, 2, kSecond, 64 * kKiB);
  CHECK(judge(t.trace()).empty());
}

TEST_CASE("the threshold: a miss in a pool only a little fragmented is not reported, the worst miss is the one told") {
  // Blocks 0, 1 and 3 given back: holes of 512 KiB and 256 KiB (768 KiB free), 1/3 fragmented.
  SyntheticTrace t = pool_with_holes(0b1011);
  t.segment(2, kSecond, kMiB).block(Api::cupyPoolMalloc, 2, kSecond, 640 * kKiB);
  CHECK(judge(t.trace()).size() == 1);  // 33% against the default 30%
  CHECK(judge(t.trace(), once(40)).empty());
  // A second, worse miss later: 2 misses, the worst told (the second segment's 384 KiB block left
  // 640 KiB free there; blocks of 128 KiB then cut it up).
  t.block(Api::cupyPoolMalloc, 2, kSecond + 640 * kKiB, 128 * kKiB)
      .block(Api::cupyPoolFree, 2, kSecond)  // frees 640 KiB at the start of the second segment
      .segment(2, 0x30000000, kMiB)
      .block(Api::cupyPoolMalloc, 2, 0x30000000, 700 * kKiB);
  const auto findings = judge(t.trace());
  REQUIRE(findings.size() == 1);
  CHECK(findings[0].count == 2);
  CHECK(findings[0].fragmentation->request_sizes == std::vector<uint64_t>{700 * kKiB, 640 * kKiB});
  CHECK(findings[0].fragmentation->requested == 700 * kKiB);
}

TEST_CASE("each pool's series on the timeline: a point at each sample after which it changed") {
  SyntheticTrace t = pool_with_holes(0b0101);  // 1 MiB, blocks 1 and 3 live: two 256 KiB holes
  t.sample(0).sample(0);                       // the second sample sees no change: no point
  t.block(Api::cupyPoolFree, 2, kFirst + 256 * kKiB).sample(0);
  Symbolizer symbolizer;
  StackResolver stacks(t.trace(), symbolizer);
  report::Timeline timeline;
  build_timeline(t.trace(), stacks, timeline);
  REQUIRE(timeline.pool_series.size() == 1);
  const report::PoolSeries& s = timeline.pool_series[0];
  CHECK(s.pool == "CuPy's memory pool");
  REQUIRE(s.t.size() == 2);
  CHECK(s.reserved == std::vector<uint64_t>{kMiB, kMiB});
  CHECK(s.used == std::vector<uint64_t>{512 * kKiB, 256 * kKiB});
  CHECK(s.free == std::vector<uint64_t>{512 * kKiB, 768 * kKiB});
  CHECK(s.largest_free == std::vector<uint64_t>{256 * kKiB, 768 * kKiB});  // block 1 gone: one hole of 3/4
}

TEST_CASE("the segment view at the worst moment: each segment's blocks by site, the holes between them") {
  SyntheticTrace t = pool_with_holes(0b0101);  // blocks 1 and 3 live
  t.segment(2, kSecond, kMiB).block(Api::cupyPoolMalloc, 2, kSecond, 384 * kKiB, 6);
  const auto findings = judge(t.trace());
  REQUIRE(findings.size() == 1);
  const report::PoolPicture& p = findings[0].fragmentation->picture;
  CHECK(findings[0].fragmentation->trigger == "miss");
  // The pool just before it grew: one segment, its two live blocks from one site.
  REQUIRE(p.segments.size() == 1);
  CHECK(p.segments[0].bytes == kMiB);
  REQUIRE(p.segments[0].blocks.size() == 2);
  CHECK(p.segments[0].blocks[0].offset == 256 * kKiB);
  CHECK(p.segments[0].blocks[0].bytes == 256 * kKiB);
  CHECK(p.segments[0].blocks[1].offset == 768 * kKiB);
  REQUIRE(p.sites.size() == 1);
  CHECK(p.sites[0].bytes == 512 * kKiB);
  CHECK(p.sites[0].count == 2);
  CHECK(p.segments[0].blocks[0].site == 0);
  CHECK_FALSE(p.truncated);
}

TEST_CASE("the segment view: blocks of one site a rounding gap apart are one span, the ninth site is 'other'") {
  SyntheticTrace t;
  t.pool(2, "", MemorySource::CupyPool).segment(2, kFirst, 4 * kMiB);
  // Ten sites, 10 blocks each of 4 KiB + 512 apart... site k's blocks are contiguous (gap 256 B).
  uint64_t at = kFirst;
  for (uint64_t site = 0; site < 10; ++site) {
    for (int i = 0; i < 10; ++i, at += 4 * kKiB + 256) t.block(Api::cupyPoolMalloc, 2, at, 4 * kKiB, 100 + site);
    at += 64 * kKiB;  // a hole between sites
  }
  Symbolizer symbolizer;
  StackResolver stacks(t.trace(), symbolizer);
  struct Grab : ReplayObserver {
    PoolSnapshot snapshot;
    void on_pool_sample(const MemorySample&, uint32_t pool, const PoolUsage&, const PoolsView& pools) override {
      snapshot = snapshot_pool(pools, pool);
    }
  } grab;
  t.sample(0);
  replay(t.trace(), &grab);
  REQUIRE(grab.snapshot.segments.size() == 1);
  CHECK(grab.snapshot.sites.size() == kPictureSites);
  // One span a site: ten spans, the last two drawn as the other sites.
  const auto& spans = grab.snapshot.segments[0].spans;
  REQUIRE(spans.size() == 10);
  CHECK(spans[0].bytes == 10 * 4 * kKiB + 9 * 256);
  CHECK(spans[8].site == -1);
  CHECK(spans[9].site == -1);
}

namespace {

constexpr uint64_t kSecondNs = 1'000'000'000;

// An NVTX heap of 1 MiB (pool 3, made at stack 9) with eight 128 KiB regions, every other one
// given back at 0.1 s: half full, four holes of 128 KiB (75% fragmented).
SyntheticTrace heap_cut_in_half() {
  SyntheticTrace t;
  t.pool(3, "arena", MemorySource::NvtxHeap, /*made_at_stack=*/9).segment(3, kFirst, kMiB);
  for (uint64_t i = 0; i < 8; ++i)
    t.block(Api::nvtxMemRegionsRegister, 3, kFirst + i * 128 * kKiB, 128 * kKiB, 5 + i % 2);
  t.sample(0).wait(kSecondNs / 10);
  for (uint64_t i = 0; i < 8; i += 2) t.block(Api::nvtxMemRegionsUnregister, 3, kFirst + i * 128 * kKiB);
  return t;
}

}  // namespace

TEST_CASE("a pool that stays fragmented while at least half full for a long stretch: fragmentation, at the heap") {
  SyntheticTrace t = heap_cut_in_half();
  t.sample(0).wait(2 * kSecondNs).sample(0);  // cut from 0.1 s to the end, 2.1 s later
  const auto findings = judge(t.trace());
  REQUIRE(findings.size() == 1);
  const report::Finding& f = findings[0];
  REQUIRE(f.fragmentation);
  const report::FragmentationStats& s = *f.fragmentation;
  CHECK(s.trigger == "stretch");
  CHECK(s.pool == "pool 'arena' (NVTX heap)");
  CHECK(s.free == 512 * kKiB);
  CHECK(s.largest_free == 128 * kKiB);
  CHECK(s.ratio == doctest::Approx(0.75));
  CHECK(s.stretch_seconds == doctest::Approx(2.0).epsilon(0.01));
  CHECK(f.api == "nvtxMemHeapRegister");
  CHECK(f.headline.find("at least half full") != std::string::npos);
  // The picture: the four live regions (two sites), holes between them.
  REQUIRE(s.picture.segments.size() == 1);
  CHECK(s.picture.segments[0].blocks.size() == 4);
  CHECK(s.picture.sites.size() == 1);  // all the live ones came from stack 6
}

TEST_CASE("no stretch: fragmented briefly then whole again, or fragmented while mostly empty") {
  // Cut for 50 ms of a 3 s run, then the regions come back: too short to tell.
  SyntheticTrace brief = heap_cut_in_half();
  brief.sample(0).wait(kSecondNs / 20);
  for (uint64_t i = 0; i < 8; i += 2) brief.block(Api::nvtxMemRegionsRegister, 3, kFirst + i * 128 * kKiB, 128 * kKiB);
  brief.sample(0).wait(3 * kSecondNs).sample(0);
  CHECK(judge(brief.trace()).empty());
  // Only two regions live (a quarter full): fragmented, but not under pressure.
  SyntheticTrace empty_ish = heap_cut_in_half();
  empty_ish.block(Api::nvtxMemRegionsUnregister, 3, kFirst + 128 * kKiB)
      .block(Api::nvtxMemRegionsUnregister, 3, kFirst + 3 * 128 * kKiB);
  empty_ish.sample(0).wait(3 * kSecondNs).sample(0);
  CHECK(judge(empty_ish.trace()).empty());
  // Every region live: full, nothing free.
  SyntheticTrace full;
  full.pool(3, "arena", MemorySource::NvtxHeap).segment(3, kFirst, kMiB);
  for (uint64_t i = 0; i < 8; ++i) full.block(Api::nvtxMemRegionsRegister, 3, kFirst + i * 128 * kKiB, 128 * kKiB);
  full.sample(0).wait(3 * kSecondNs).sample(0);
  CHECK(judge(full.trace()).empty());
  // A higher threshold than the pool ever reached.
  SyntheticTrace cut = heap_cut_in_half();
  cut.sample(0).wait(2 * kSecondNs).sample(0);
  CHECK(judge(cut.trace(), once(80)).empty());
}

TEST_CASE("a stream-ordered pool with slack and no failures is not measured: no finding") {
  SyntheticTrace t;
  for (uint64_t i = 0; i < 8; ++i) t.alloc(Api::cudaMallocAsync, kFirst + i * kMiB, kMiB);
  for (uint64_t i = 0; i < 8; i += 2) t.release(Api::cudaFreeAsync, kFirst + i * kMiB);
  t.sample(0).wait(3 * kSecondNs).sample(0);
  CHECK(judge(t.trace()).empty());
}

TEST_CASE("out of memory while a pool's holes held the request in total: the verdict says fragmentation, measured") {
  SyntheticTrace t = pool_with_holes(0b0101);  // 512 KiB free in holes of 256 KiB
  t.sample(0).alloc(Api::cudaMalloc, 0, 384 * kKiB, /*stack=*/7, /*result=*/2).sample(79ull << 30);
  Symbolizer symbolizer;
  StackResolver stacks(t.trace(), symbolizer);
  CallSiteJudge site_judge;
  FailureJudge failures(t.trace(), stacks, site_judge);
  std::set<uint64_t> explained;
  const auto findings = oom_findings(t.trace(), stacks, failures, explained);
  REQUIRE(findings.size() == 1);
  REQUIRE(findings[0].out_of_memory);
  CHECK(findings[0].out_of_memory->verdict.find("inside CuPy's memory pool (512.0 KiB in holes)") != std::string::npos);
  CHECK(findings[0].out_of_memory->verdict.find("measured in the pool") != std::string::npos);
  bool advice = false;
  for (const std::string& n : findings[0].notes) advice |= n.find("empty_cache") != std::string::npos;
  CHECK(advice);
}

TEST_CASE("a site is shown at its first frame outside the pool's own code") {
  const auto frame = [](const char* function, const char* file) {
    report::Frame f;
    f.function = function, f.file = file;
    return f;
  };
  // The pool made in setup() (app.cu), a block asked for in step() (app.cu) through the pool's alloc.
  const std::vector<report::Frame> made = {frame("NvtxHeap::NvtxHeap", "nvtx_heap.h"),
                                           frame("FirstFitPool::FirstFitPool", "first_fit_pool.h"),
                                           frame("setup", "app.cu"), frame("main", "app.cu")};
  const std::vector<report::Frame> block = {frame("NvtxHeap::region", "nvtx_heap.h"),
                                            frame("FirstFitPool::alloc", "first_fit_pool.h"), frame("step", "app.cu"),
                                            frame("main", "app.cu")};
  REQUIRE(site_frame(made, block));
  CHECK(site_frame(made, block)->function == "step");
  // Made right in main: the same.
  const std::vector<report::Frame> in_main = {made[0], made[1], made[3]};
  CHECK(site_frame(in_main, block)->function == "step");
  // Nothing known of the pool: the block's first frame.
  CHECK(site_frame({}, block)->function == "NvtxHeap::region");
}

TEST_CASE("a pool that can grow is reported when it keeps missing and pays for it, not for one miss now and then") {
  // One miss (the first case's layout): what a caching allocator does now and then.
  SyntheticTrace one = pool_with_holes(0b0101);
  one.segment(2, kSecond, kMiB).block(Api::cupyPoolMalloc, 2, kSecond, 384 * kKiB, 6);
  CHECK(judge(one.trace(), FragmentationOptions{}).empty());
  // Three misses, each taking a new 1 MiB segment: 3 MiB of a 4 MiB peak taken instead.
  SyntheticTrace three = pool_with_holes(0b0101);
  for (uint64_t i = 0; i < 3; ++i) {
    const uint64_t base = kSecond + i * 0x1000000;
    three.segment(2, base, kMiB)
        .block(Api::cupyPoolMalloc, 2, base, 384 * kKiB, 6)
        .block(Api::cupyPoolMalloc, 2, base + 384 * kKiB, 640 * kKiB, 7);
  }
  // (Their holes fall from 25% of the reserve to 12.5%: counted only when any share of holes counts.)
  FragmentationOptions any_share;
  any_share.min_hole_share = 0;
  const auto findings = judge(three.trace(), any_share);
  REQUIRE(findings.size() == 1);
  CHECK(findings[0].count == 3);
  // With the default share (a fifth of the reserve), a pool nearly full that misses is growing.
  CHECK(judge(three.trace(), FragmentationOptions{}).empty());
  // The same three misses in a pool that reserved 64 MiB more elsewhere cost it too little to tell.
  SyntheticTrace big = pool_with_holes(0b0101);
  big.segment(2, 0x40000000, 64 * kMiB).block(Api::cupyPoolMalloc, 2, 0x40000000, 64 * kMiB, 8);
  for (uint64_t i = 0; i < 3; ++i) {
    const uint64_t base = kSecond + i * 0x1000000;
    big.segment(2, base, kMiB)
        .block(Api::cupyPoolMalloc, 2, base, 384 * kKiB, 6)
        .block(Api::cupyPoolMalloc, 2, base + 384 * kKiB, 640 * kKiB, 7);
  }
  CHECK(judge(big.trace(), any_share).empty());
}

TEST_CASE("misses while a cache fills in its first steps, then none for the rest of its work, are not reported") {
  // Three misses, then the pool serves blocks for a long time (ResNet-50's PyTorch cache).
  FragmentationOptions any_share;
  any_share.min_hole_share = 0;
  for (bool go_on : {false, true}) {
    CAPTURE(go_on);
    SyntheticTrace t = pool_with_holes(0b0101);
    for (uint64_t i = 0; i < 3; ++i) {
      const uint64_t base = kSecond + i * 0x1000000;
      if (go_on) t.wait(400'000'000);  // the misses spread over the pool's work
      t.segment(2, base, kMiB)
          .block(Api::cupyPoolMalloc, 2, base, 384 * kKiB, 6)
          .block(Api::cupyPoolMalloc, 2, base + 384 * kKiB, 640 * kKiB, 7);
    }
    for (uint64_t step = 0; step < 10; ++step) {  // then blocks served from what it has
      t.wait(go_on ? 10'000'000 : 100'000'000);
      t.block(Api::cupyPoolMalloc, 2, kFirst, 256 * kKiB, 8).block(Api::cupyPoolFree, 2, kFirst);
    }
    CHECK(judge(t.trace(), any_share).size() == (go_on ? 1u : 0u));
  }
}

TEST_CASE("a pool cut into holes over its work, then missing in one burst at the end: fragmentation") {
  // The seeds' story, as CuPy's fragment case on the H200: blocks served for a long time, then
  // three larger requests in a millisecond fit no hole and each takes a new segment.
  FragmentationOptions any_share;
  any_share.min_hole_share = 0;
  SyntheticTrace t = pool_with_holes(0b0101);
  for (uint64_t step = 0; step < 10; ++step) {
    t.wait(100'000'000);
    t.block(Api::cupyPoolMalloc, 2, kFirst, 256 * kKiB, 8).block(Api::cupyPoolFree, 2, kFirst);
  }
  for (uint64_t i = 0; i < 3; ++i) {
    const uint64_t base = kSecond + i * 0x1000000;
    t.wait(100'000);
    t.segment(2, base, kMiB)
        .block(Api::cupyPoolMalloc, 2, base, 384 * kKiB, 6)
        .block(Api::cupyPoolMalloc, 2, base + 384 * kKiB, 640 * kKiB, 7);
  }
  CHECK(judge(t.trace(), any_share).size() == 1);
}
