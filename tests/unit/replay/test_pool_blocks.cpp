// Blocks of pools (NVTX-annotated heaps, framework pools): replayed in a key space of their own,
// inside memory the pool itself allocated, and judged like allocations.
#include <doctest/doctest.h>

#include <algorithm>

#include "leak_findings.h"
#include "release_findings.h"
#include "replay.h"
#include "symbolizer.h"
#include "synthetic_trace.h"

using namespace cuaudit;
using cuaudit::testing::SyntheticTrace;

namespace {

std::vector<report::Finding> judge(const ProcessTrace& trace, ReplayResult* out = nullptr) {
  ReplayResult result = replay(trace);
  Symbolizer symbolizer;
  StackResolver stacks(trace, symbolizer);
  std::vector<report::Finding> findings = release_findings(result.release_findings, trace, stacks);
  for (auto& f : leak_findings(trace, result, stacks, testing::no_holders())) findings.push_back(std::move(f));
  if (out) *out = std::move(result);
  return findings;
}

// A pool's memory (one cudaMalloc, released at the end) with blocks handed out of it.
SyntheticTrace pool_over_one_allocation() {
  SyntheticTrace t;
  t.alloc(Api::cudaMalloc, 0x10000, 1 << 20).pool(1, "SimplePool");
  return t;
}

}  // namespace

TEST_CASE("blocks handed out and taken back are clean, the pool's own memory is not disturbed by them") {
  SyntheticTrace t = pool_over_one_allocation();
  t.block(Api::nvtxMemRegionsRegister, 1, 0x10000, 256)  // the same address as the pool's allocation
      .block(Api::nvtxMemRegionsRegister, 1, 0x10100, 256)
      .block(Api::nvtxMemRegionsUnregister, 0, 0x10000)
      .block(Api::nvtxMemRegionsUnregister, 0, 0x10100)
      .release(Api::cudaFree, 0x10000)
      .end();
  ReplayResult result;
  CHECK(judge(t.trace(), &result).empty());
  CHECK(result.leaks.empty());
  CHECK(result.allocations == 3);
  CHECK(result.releases == 3);
}

TEST_CASE("a block never returned is a leak named after its pool, even when the pool's memory was freed") {
  SyntheticTrace t = pool_over_one_allocation();
  t.block(Api::nvtxMemRegionsRegister, 1, 0x10000, 256, 11)
      .block(Api::nvtxMemRegionsRegister, 1, 0x10100, 512, 12)
      .block(Api::nvtxMemRegionsUnregister, 0, 0x10000)
      .release(Api::cudaFree, 0x10000)
      .end();
  const auto findings = judge(t.trace());
  REQUIRE(findings.size() == 1);
  const report::Finding& f = findings[0];
  CHECK(f.kind == report::FindingKind::Leak);
  CHECK(f.bytes == 512);
  CHECK(f.count == 1);
  CHECK(f.api == "nvtxMemRegionsRegister");
  CHECK(f.headline.find("pool 'SimplePool' (NVTX heap)") != std::string::npos);
  CHECK(f.headline ==
        "Leak of 512 byte(s) in 1 block(s) of pool 'SimplePool' (NVTX heap), handed out by "
        "nvtxMemRegionsRegister and never returned with nvtxMemRegionsUnregister, at:");
  CHECK(f.notes.empty());
}

TEST_CASE("blocks still handed out when their heap is unregistered or reset leak then, other pools' do not") {
  for (Api end_of_pool : {Api::nvtxMemHeapUnregister, Api::nvtxMemHeapReset}) {
    CAPTURE(api_info(end_of_pool).name);
    SyntheticTrace t = pool_over_one_allocation();
    t.pool(2, "Other")
        .block(Api::nvtxMemRegionsRegister, 1, 0x10000, 64)
        .block(Api::nvtxMemRegionsRegister, 2, 0x90000, 64)
        .block(end_of_pool, 1, 0)
        .block(Api::nvtxMemRegionsRegister, 1, 0x10000, 64)  // the reset heap hands it out again
        .block(Api::nvtxMemRegionsUnregister, 0, 0x10000)
        .block(Api::nvtxMemRegionsUnregister, 0, 0x90000)
        .release(Api::cudaFree, 0x10000)
        .end();
    ReplayResult result;
    const auto findings = judge(t.trace(), &result);
    REQUIRE(result.leaks.size() == 1);
    CHECK(result.leaks[0].end == LeakEnd::PoolReleased);
    CHECK(result.leaks[0].allocation.pool == 1);
    REQUIRE(findings.size() == 1);
    CHECK(findings[0].notes.front().find("still handed out when its pool was unregistered or reset") !=
          std::string::npos);
  }
}

TEST_CASE("a block returned twice is a double free, one never handed out or an interior pointer an invalid free") {
  SyntheticTrace t = pool_over_one_allocation();
  t.block(Api::nvtxMemRegionsRegister, 1, 0x10000, 256)
      .block(Api::nvtxMemRegionsUnregister, 0, 0x10000, 0, 21)
      .block(Api::nvtxMemRegionsUnregister, 0, 0x10000, 0, 22)  // again
      .block(Api::nvtxMemRegionsRegister, 1, 0x20000, 256)
      .block(Api::nvtxMemRegionsUnregister, 0, 0x20010, 0, 23)  // inside it
      .block(Api::nvtxMemRegionsUnregister, 0, 0x20000)
      .block(Api::nvtxMemRegionsUnregister, 0, 0x70000, 0, 24)  // never handed out
      .release(Api::cudaFree, 0x10000)
      .end();
  const auto findings = judge(t.trace());
  REQUIRE(findings.size() == 3);
  CHECK(findings[0].kind == report::FindingKind::DoubleFree);
  CHECK(findings[0].headline.find("a block of pool 'SimplePool' (NVTX heap)") != std::string::npos);
  CHECK(findings[0].result.empty());  // NVTX returns nothing to report
  CHECK(findings[1].kind == report::FindingKind::InvalidFree);
  CHECK(findings[1].headline.find("16 byte(s) inside a 256-byte allocation") != std::string::npos);
  CHECK(findings[2].kind == report::FindingKind::InvalidFree);
  CHECK(findings[2].headline.find("which the pool never handed out") != std::string::npos);
}

TEST_CASE("a resized block keeps its pool and stack, resizing one never handed out is an invalid free") {
  SyntheticTrace t = pool_over_one_allocation();
  t.block(Api::nvtxMemRegionsRegister, 1, 0x10000, 256, 31)
      .block(Api::nvtxMemRegionsResize, 0, 0x10000, 4096, 32)
      .block(Api::nvtxMemRegionsResize, 0, 0x50000, 64, 33)
      .release(Api::cudaFree, 0x10000)
      .end();
  ReplayResult result;
  const auto findings = judge(t.trace(), &result);
  REQUIRE(result.leaks.size() == 1);
  CHECK(result.leaks[0].allocation.bytes == 4096);
  CHECK(result.leaks[0].allocation.stack_id == 31);
  CHECK(result.leaks[0].allocation.pool == 1);
  REQUIRE(result.release_findings.size() == 1);
  CHECK(result.release_findings[0].problem == ReleaseProblem::Invalid);
  CHECK(result.allocations == 2);  // the pool's memory and the block; a resize is not an allocation
}

TEST_CASE("launch checks see blocks: the offset into the block, a pointer into a returned block is stale") {
  SyntheticTrace t = pool_over_one_allocation();
  t.block(Api::nvtxMemRegionsRegister, 1, 0x10100, 256)
      .launch_param("_Z5scaleP6float4", 0, 0x10104, trace::LaunchProblem::Misaligned, 16)
      .block(Api::nvtxMemRegionsUnregister, 0, 0x10100)
      .launch_param("_Z5scaleP6float4", 0, 0x10100, trace::LaunchProblem::ReturnedToPool)
      .release(Api::cudaFree, 0x10000)
      .end();
  const ReplayResult result = replay(t.trace());
  REQUIRE(result.launch_params.size() == 2);
  REQUIRE(result.launch_params[0].live);
  CHECK(result.launch_params[0].live->api == Api::nvtxMemRegionsRegister);
  CHECK(result.launch_params[0].offset == 4);
  CHECK(!result.launch_params[1].live);
  REQUIRE(result.launch_params[1].freed);
  CHECK(result.launch_params[1].freed->api == Api::nvtxMemRegionsRegister);
  REQUIRE(result.launch_params[1].release);
  CHECK(result.launch_params[1].release->api == Api::nvtxMemRegionsUnregister);
}

TEST_CASE("pool blocks are never added to what the process holds on its device") {
  SyntheticTrace t = pool_over_one_allocation();
  t.block(Api::cupyPoolMalloc, 1, 0x10000, 512).sample(1 << 20).end();
  struct Holdings : ReplayObserver {
    uint64_t total = 0, blocks = 0;
    void on_sample(const MemorySample&, const DeviceHoldings& held, const LiveVisitor&) override {
      total = held.total;
      blocks = held.by_family[static_cast<size_t>(MemoryFamily::PoolBlock)];
    }
  } holdings;
  replay(t.trace(), &holdings);
  CHECK(holdings.total == 1 << 20);
  CHECK(holdings.blocks == 0);
}

TEST_CASE("a framework pool's blocks allocated at exit are Python's arrays, not leaks, an NVTX heap's are") {
  SyntheticTrace t;
  t.alloc(Api::cudaMalloc, 0x10000, 1 << 20)
      .pool(1, "CuPy memory pool", trace::PoolKind::CupyPool)
      .pool(2, "requests")
      .block(Api::cupyPoolMalloc, 1, 0x10000, 512)
      .block(Api::nvtxMemRegionsRegister, 2, 0x10200, 512)
      .end();
  const auto findings = judge(t.trace());
  REQUIRE(findings.size() == 2);  // the segment and the NVTX block
  CHECK(findings[0].api == "cudaMalloc");
  CHECK(findings[1].api == "nvtxMemRegionsRegister");
}
