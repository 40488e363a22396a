// Pools cut into holes (tool/checks/fragmentation_findings.h): a request that did not fit in a
// pool's free memory although enough was free, so that the pool grew, on hand-made layouts.
#include <doctest/doctest.h>

#include "fragmentation_findings.h"
#include "symbolizer.h"
#include "synthetic_trace.h"
#include "timeline.h"

using namespace cuaudit;
using cuaudit::testing::SyntheticTrace;

namespace {

constexpr uint64_t kKiB = 1024, kMiB = 1024 * kKiB;
constexpr uint64_t kFirst = 0x10000000, kSecond = 0x20000000;

std::vector<report::Finding> judge(const ProcessTrace& trace, FragmentationOptions options = {}) {
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

TEST_CASE("what a framework's rounding leaves after each block is not a hole to miss in") {
  // 2000 blocks of 512 - 100 bytes asked, each at a 512-byte step: 200,000 bytes of slack and no
  // hole; a 64 KiB request then needs a new segment, rightly.
  SyntheticTrace t;
  t.pool(2, "", MemorySource::CupyPool).segment(2, kFirst, 2000 * 512);
  for (uint64_t i = 0; i < 2000; ++i) t.block(Api::cupyPoolMalloc, 2, kFirst + i * 512, 412);
  t.segment(2, kSecond, kMiB).block(Api::cupyPoolMalloc, 2, kSecond, 64 * kKiB);
  CHECK(judge(t.trace()).empty());
}

TEST_CASE("the threshold: a miss in a pool only a little fragmented is not reported; the worst miss is the one told") {
  // Blocks 0, 1 and 3 given back: holes of 512 KiB and 256 KiB (768 KiB free), 1/3 fragmented.
  SyntheticTrace t = pool_with_holes(0b1011);
  t.segment(2, kSecond, kMiB).block(Api::cupyPoolMalloc, 2, kSecond, 640 * kKiB);
  CHECK(judge(t.trace()).size() == 1);  // 33% against the default 30%
  FragmentationOptions strict;
  strict.threshold_percent = 40;
  CHECK(judge(t.trace(), strict).empty());
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
  t.sample(0).sample(0);                        // the second sample sees no change: no point
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
