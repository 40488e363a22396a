// The pools' heaps (tool/replay/pool_heaps.h): what each pool's segments and blocks make of its memory,
// computed exactly on hand-made layouts, and blocks judged apart from CUDA's own allocations.
#include <doctest/doctest.h>

#include "pool_heaps.h"
#include "synthetic_trace.h"

using namespace cuaudit;

namespace {

constexpr uint64_t kMiB = 1 << 20;

MemoryEvent block(Api api, uint32_t pool, uint64_t key, uint64_t bytes = 0, uint64_t seq = 1) {
  MemoryEvent m;
  m.seq = seq;
  m.api = api;
  m.pool = pool;
  m.key = key;
  m.bytes = bytes;
  return m;
}

PoolSegmentFact segment(uint32_t pool, uint64_t base, uint64_t bytes, bool mapped = true) {
  return PoolSegmentFact{pool, base, bytes, 0, mapped};
}

}  // namespace

TEST_CASE("a pool's usage: reserved, used, free and the largest gap between its blocks, exactly") {
  ReplayResult result;
  PoolHeaps heaps(result, nullptr);
  heaps.segment(segment(1, 0x100000, kMiB));
  heaps.apply(block(Api::nvtxMemRegionsRegister, 1, 0x100000, 256));
  heaps.apply(block(Api::nvtxMemRegionsRegister, 1, 0x100200, 256));
  heaps.apply(block(Api::nvtxMemRegionsRegister, 1, 0x110000, 4096));
  PoolUsage u = heaps.usage(1);
  CHECK(u.reserved == kMiB);
  CHECK(u.used == 256 + 256 + 4096);
  CHECK(u.free == kMiB - (256 + 256 + 4096));
  CHECK(u.segments == 1);
  CHECK(u.blocks == 3);
  // Gaps: 256 bytes at 0x100100, 0xfd00 at 0x100300, and 0x100000 - 0x11000 = 0xef000 at the end.
  CHECK(u.largest_free == 0x200000 - 0x111000);
  CHECK(u.fragmentation() == doctest::Approx(1.0 - double(0x200000 - 0x111000) / double(u.free)));

  // Taking a block back joins its gap with its neighbours'.
  heaps.apply(block(Api::nvtxMemRegionsUnregister, 0, 0x110000));
  u = heaps.usage(1);
  CHECK(u.used == 512);
  CHECK(u.largest_free == 0x200000 - 0x100300);
  CHECK(u.blocks == 2);
  CHECK(result.releases == 1);
}

TEST_CASE("a pool's usage with no segment said, several segments, and a segment CUDA released") {
  ReplayResult result;
  PoolHeaps heaps(result, nullptr);
  heaps.apply(block(Api::cupyPoolMalloc, 2, 0x500000, 512));
  CHECK(heaps.usage(2).used == 512);
  CHECK(heaps.usage(2).reserved == 0);  // CuPy's hook said nothing of its memory yet
  CHECK(heaps.usage(2).largest_free == 0);
  CHECK(heaps.usage(2).fragmentation() == 0.0);
  heaps.segment(segment(2, 0x500000, 4096));
  heaps.segment(segment(2, 0x900000, 2048));
  PoolUsage u = heaps.usage(2);
  CHECK(u.reserved == 4096 + 2048);
  CHECK(u.free == 4096 - 512 + 2048);
  CHECK(u.largest_free == 4096 - 512);
  CHECK(u.segments == 2);
  heaps.cuda_released(0x500000);  // free_all_blocks: the pool's cudaFree
  u = heaps.usage(2);
  CHECK(u.segments == 1);
  CHECK(u.reserved == 2048);
  // A block that starts before a segment and reaches into it covers the segment's start.
  heaps.apply(block(Api::cupyPoolMalloc, 2, 0x8fff00, 0x200));
  CHECK(heaps.usage(2).largest_free == 2048 - 0x100);
  CHECK(heaps.pools() == std::vector<uint32_t>{2});
}

TEST_CASE("each pool keeps its own accounts, a block taken back by pool 0 is found by its address") {
  ReplayResult result;
  PoolHeaps heaps(result, nullptr);
  heaps.segment(segment(1, 0x100000, 4096));
  heaps.segment(segment(3, 0x200000, 4096));
  heaps.apply(block(Api::nvtxMemRegionsRegister, 1, 0x100000, 1024));
  heaps.apply(block(Api::nvtxMemRegionsRegister, 3, 0x200000, 2048));
  CHECK(heaps.usage(1).used == 1024);
  CHECK(heaps.usage(3).used == 2048);
  heaps.apply(block(Api::nvtxMemRegionsResize, 0, 0x200000, 3072));  // NVTX says no pool on a resize
  CHECK(heaps.usage(3).used == 3072);
  heaps.apply(block(Api::nvtxMemRegionsUnregister, 0, 0x200000));
  CHECK(heaps.usage(3).used == 0);
  CHECK(heaps.usage(3).largest_free == 4096);
  CHECK(heaps.usage(1).used == 1024);
  REQUIRE(heaps.released_containing(0x200010) != nullptr);
  CHECK(heaps.released_containing(0x200010)->allocation.bytes == 3072);
  CHECK(heaps.containing(0x100010)->key == 0x100000);
  // The heap's end: its blocks leak as the pool took them back with it; its segment goes.
  heaps.apply(block(Api::nvtxMemHeapUnregister, 1, 0));
  heaps.segment(segment(1, 0x100000, 4096, /*mapped=*/false));
  REQUIRE(result.leaks.size() == 1);
  CHECK(result.leaks[0].end == LeakEnd::PoolReleased);
  CHECK(heaps.usage(1).reserved == 0);
}

TEST_CASE("the replay: a pool's segments and blocks beside CUDA's allocation they live in") {
  testing::SyntheticTrace t;
  t.alloc(Api::cudaMalloc, 0x100000, kMiB).pool(1, "SimplePool");
  t.segment(1, 0x100000, kMiB);
  t.block(Api::nvtxMemRegionsRegister, 1, 0x100000, 256).block(Api::nvtxMemRegionsRegister, 1, 0x100100, 256);
  t.block(Api::nvtxMemRegionsUnregister, 0, 0x100000);
  t.end();
  const ReplayResult result = replay(t.trace());
  // The pool's cudaMalloc and its live block leak, each as what it is.
  REQUIRE(result.leaks.size() == 2);
  CHECK(result.leaks[0].allocation.api == Api::cudaMalloc);
  CHECK(result.leaks[1].allocation.api == Api::nvtxMemRegionsRegister);
  CHECK(result.leaks[1].allocation.key == 0x100100);
  CHECK(result.allocations == 3);
  CHECK(result.releases == 1);
}
