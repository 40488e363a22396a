#include <doctest/doctest.h>

#include "released_memory.h"
#include "replay.h"
#include "synthetic_trace.h"

using namespace cuaudit;
using cuaudit::testing::SyntheticTrace;

TEST_CASE("an allocation released with its own API is not a leak, for every family") {
  struct Pair {
    Api alloc, release;
  };
  const Pair pairs[] = {
      {Api::cudaMalloc, Api::cudaFree},
      {Api::cudaMallocPitch, Api::cudaFree},
      {Api::cudaMalloc3D, Api::cudaFree},
      {Api::cudaMallocManaged, Api::cudaFree},
      {Api::cudaMallocAsync, Api::cudaFreeAsync},
      {Api::cudaMallocAsync, Api::cudaFree},  // cudaFree on pool memory is legal
      {Api::cudaMallocFromPoolAsync, Api::cudaFreeAsync},
      {Api::cudaMallocHost, Api::cudaFreeHost},
      {Api::cudaHostAlloc, Api::cudaFreeHost},
      {Api::cudaHostRegister, Api::cudaHostUnregister},
      {Api::cudaMallocArray, Api::cudaFreeArray},
      {Api::cudaMalloc3DArray, Api::cudaFreeArray},
      {Api::cudaMallocMipmappedArray, Api::cudaFreeMipmappedArray},
      {Api::cuMemAlloc, Api::cuMemFree},
      {Api::cuMemAllocPitch, Api::cuMemFree},
      {Api::cuMemAllocManaged, Api::cuMemFree},
      {Api::cuMemAllocHost, Api::cuMemFreeHost},
      {Api::cuMemHostAlloc, Api::cuMemFreeHost},
      {Api::cuMemHostRegister, Api::cuMemHostUnregister},
      {Api::cuMemAllocAsync, Api::cuMemFreeAsync},
      {Api::cuMemAllocFromPoolAsync, Api::cuMemFreeAsync},
      {Api::cuArrayCreate, Api::cuArrayDestroy},
      {Api::cuArray3DCreate, Api::cuArrayDestroy},
      {Api::cuMipmappedArrayCreate, Api::cuMipmappedArrayDestroy},
      {Api::cuMemCreate, Api::cuMemRelease},
      {Api::cuMemAddressReserve, Api::cuMemAddressFree},
      {Api::cuMemMap, Api::cuMemUnmap},
  };
  for (const Pair& p : pairs) {
    CAPTURE(api_info(p.alloc).name);
    CAPTURE(api_info(p.release).name);
    const auto result =
        replay(SyntheticTrace().alloc(p.alloc, 0x1000, 64).release(p.release, 0x1000, 0, 64).end().trace());
    CHECK(result.leaks.empty());
    CHECK(result.allocations == 1);
    CHECK(result.releases == 1);
  }
}

TEST_CASE("every family's unreleased allocation is a leak named by its own API") {
  for (size_t i = 0; i < static_cast<size_t>(Api::Count); ++i) {
    const Api api = static_cast<Api>(i);
    // A resize changes a block handed out before (test_pool_blocks.cpp); it hands out nothing.
    if (api_info(api).role != ApiRole::Alloc || api == Api::nvtxMemRegionsResize) continue;
    CAPTURE(api_info(api).name);
    const auto result = replay(SyntheticTrace().alloc(api, 0x2000, 128).end().trace());
    REQUIRE(result.leaks.size() == 1);
    CHECK(result.leaks[0].allocation.api == api);
    CHECK(result.leaks[0].allocation.bytes == 128);
    CHECK(result.leaks[0].end == LeakEnd::ProcessExit);
  }
}

TEST_CASE("address reuse: freed, allocated again at the same address, freed once is clean") {
  const auto result = replay(SyntheticTrace()
                                 .alloc(Api::cudaMalloc, 0x7000, 4096, 10)
                                 .release(Api::cudaFree, 0x7000)
                                 .alloc(Api::cudaMalloc, 0x7000, 4096, 11)
                                 .release(Api::cudaFree, 0x7000)
                                 .end()
                                 .trace());
  CHECK(result.leaks.empty());
  CHECK(result.allocations == 2);
}

TEST_CASE("address reuse: the second life of an address leaks, the first does not") {
  const auto result = replay(SyntheticTrace()
                                 .alloc(Api::cudaMalloc, 0x7000, 4096, 10)
                                 .release(Api::cudaFree, 0x7000)
                                 .alloc(Api::cudaMalloc, 0x7000, 512, 11)
                                 .end()
                                 .trace());
  REQUIRE(result.leaks.size() == 1);
  CHECK(result.leaks[0].allocation.stack_id == 11);
  CHECK(result.leaks[0].allocation.bytes == 512);
}

TEST_CASE("a failed allocation is not live, a failed release frees nothing") {
  const auto result = replay(SyntheticTrace()
                                 .alloc(Api::cudaMalloc, 0, 1ull << 50, 1, /*result=*/2)
                                 .alloc(Api::cudaMallocHost, 0x9000, 100)
                                 .release(Api::cudaFree, 0x9000, /*result=*/1)  // wrong API: refused
                                 .end()
                                 .trace());
  CHECK(result.failed_allocations == 1);
  REQUIRE(result.leaks.size() == 1);
  CHECK(result.leaks[0].allocation.api == Api::cudaMallocHost);
}

TEST_CASE("releases refused because CUDA is shutting down are not leaks") {
  const auto result = replay(SyntheticTrace()
                                 .alloc(Api::cudaMalloc, 0x5000, 256)
                                 .end()
                                 .release(Api::cudaFree, 0x5000, /*cudaErrorCudartUnloading=*/4)
                                 .trace());
  CHECK(result.leaks.empty());
  CHECK(result.released_during_shutdown == 1);
}

TEST_CASE("cudaFree(nullptr) is a legal no-op") {
  const auto result = replay(SyntheticTrace().release(Api::cudaFree, 0).end().trace());
  CHECK(result.unmatched_releases == 0);
  CHECK(result.releases == 0);
}

TEST_CASE("keys of different spaces do not collide") {
  // An array handle may equal a device address numerically; releasing one leaves the other.
  const auto result = replay(SyntheticTrace()
                                 .alloc(Api::cudaMalloc, 0x4000, 10)
                                 .alloc(Api::cudaMallocArray, 0x4000, 20)
                                 .release(Api::cudaFreeArray, 0x4000)
                                 .end()
                                 .trace());
  REQUIRE(result.leaks.size() == 1);
  CHECK(result.leaks[0].allocation.api == Api::cudaMalloc);
}

TEST_CASE("cuMemUnmap releases every mapping inside its range") {
  const auto result = replay(SyntheticTrace()
                                 .alloc(Api::cuMemMap, 0x10000, 0x1000)
                                 .alloc(Api::cuMemMap, 0x11000, 0x1000)
                                 .alloc(Api::cuMemMap, 0x20000, 0x1000)
                                 .release(Api::cuMemUnmap, 0x10000, 0, 0x2000)
                                 .end()
                                 .trace());
  REQUIRE(result.leaks.size() == 1);
  CHECK(result.leaks[0].allocation.key == 0x20000);
  CHECK(result.releases == 2);
}

TEST_CASE("a destroyed context reclaims its allocations, which stay leaks of the program") {
  const auto result = replay(SyntheticTrace()
                                 .alloc(Api::cudaMalloc, 0x1000, 10, 1, 0, /*context=*/7)
                                 .alloc(Api::cudaMalloc, 0x2000, 20, 1, 0, /*context=*/8)
                                 .alloc(Api::cudaMallocAsync, 0x3000, 30, 1, 0, /*context=*/7)
                                 .destroy_context(7)
                                 .alloc(Api::cudaMalloc, 0x1000, 40, 1, 0, 7)  // address reused after reset
                                 .release(Api::cudaFree, 0x1000)
                                 .end()
                                 .trace());
  REQUIRE(result.leaks.size() == 3);
  CHECK(result.leaks[0].end == LeakEnd::ContextDestroyed);
  CHECK(result.leaks[0].allocation.bytes == 10);
  // Pool memory belongs to the device, not the context: still live at exit.
  int at_exit = 0;
  for (const auto& l : result.leaks) at_exit += l.end == LeakEnd::ProcessExit;
  CHECK(at_exit == 2);
}

TEST_CASE("a process that never reached exit leaks as a died process") {
  const auto result = replay(SyntheticTrace().alloc(Api::cudaMalloc, 0x1000, 10).trace());
  REQUIRE(result.leaks.size() == 1);
  CHECK(result.leaks[0].end == LeakEnd::ProcessDied);
}

TEST_CASE("ranges that wrap around the address space (a damaged trace) replay without harm") {
  // Found by fuzzing: an allocation at the top of the address space whose size wraps made the
  // replay erase a reversed range of released addresses.
  SyntheticTrace t;
  t.alloc(Api::cudaMalloc, 0x1000, 64).release(Api::cudaFree, 0x1000);
  t.alloc(Api::cudaMalloc, UINT64_MAX - 10, 4096);
  t.release(Api::cuMemUnmap, UINT64_MAX - 100, 0, 4096);
  const ReplayResult r = replay(t.end().trace());
  CHECK(r.leaks.size() == 1);
}

TEST_CASE("a long run's releases at fresh addresses stay bounded: the recent ones still catch double frees") {
  // 300,000 pairs at addresses never allocated again (more than the 262,144 kept), then a second
  // release of the first (forgotten: invalid) and of the last (kept: double).
  constexpr int32_t kInvalidValue = 1;
  SyntheticTrace t;
  constexpr uint64_t kPairs = 300000;
  for (uint64_t i = 0; i < kPairs; ++i)
    t.alloc(Api::cudaMalloc, 0x10000000 + i * 4096, 4096).release(Api::cudaFree, 0x10000000 + i * 4096);
  t.release(Api::cudaFree, 0x10000000, kInvalidValue)
      .release(Api::cudaFree, 0x10000000 + (kPairs - 1) * 4096, kInvalidValue);
  const ReplayResult r = replay(t.end().trace(), nullptr);
  CHECK(r.forgotten_releases >= kPairs - ReleasedRanges::kDefaultCapacity);
  CHECK(r.forgotten_releases <= kPairs - ReleasedRanges::kDefaultCapacity / 2);
  REQUIRE(r.release_findings.size() == 2);
  CHECK(r.release_findings[0].problem == ReleaseProblem::Invalid);
  CHECK(r.release_findings[1].problem == ReleaseProblem::Double);
}
