// Who holds a byte, decided once (tool/replay/ownership.h): a pool's reserve, its blocks, the
// program's own memory; and the leak check's held_by_allocator from the model, with no frame rule.
#include <doctest/doctest.h>

#include "growth_findings.h"
#include "leak_findings.h"
#include "ownership.h"
#include "replay.h"
#include "symbolizer.h"
#include "synthetic_trace.h"

using namespace cuaudit;
using cuaudit::testing::SyntheticTrace;

namespace {

constexpr uint64_t kMiB = 1 << 20;

// The leak check's findings with no held_by_allocator rule at all (--builtin-suppressions no).
std::vector<report::Finding> leaks_without_rules(const ProcessTrace& trace) {
  const ReplayResult result = replay(trace);
  Symbolizer symbolizer;
  StackResolver stacks(trace, symbolizer);
  return leak_findings(trace, result, stacks, testing::no_holders());
}

const LeakedAllocation& leak_at(const ReplayResult& r, uint64_t key) {
  for (const LeakedAllocation& l : r.leaks) {
    if (l.allocation.key == key) return l;
  }
  FAIL("no leak at that address");
  return r.leaks.front();
}

}  // namespace

TEST_CASE("a framework's segment is its reserve, held on purpose, whatever the rules say") {
  SyntheticTrace t;
  t.pool(3, "", MemorySource::TorchCaching)
      .alloc(Api::cudaMalloc, 0x100000, 2 * kMiB)  // the caching allocator's segment
      .segment(3, 0x100000, 2 * kMiB)
      .alloc(Api::cudaMalloc, 0x900000, kMiB)  // the program's own cudaMalloc beside it
      .end();
  const ReplayResult r = replay(t.trace());
  const Owner segment = leak_at(r, 0x100000).owner;
  CHECK(segment.is_reserve());
  CHECK(segment.pool == 3);
  CHECK(segment.source == MemorySource::TorchCaching);
  CHECK(segment.held_on_purpose());
  CHECK(r.ownership.segment_of(leak_at(r, 0x100000).allocation) == 3u);
  CHECK(leak_at(r, 0x900000).owner.holding == Holding::Program);
  CHECK_FALSE(r.ownership.segment_of(leak_at(r, 0x900000).allocation));

  const auto findings = leaks_without_rules(t.trace());
  REQUIRE(findings.size() == 2);
  CHECK(findings[0].kind == report::FindingKind::HeldByAllocator);
  CHECK(findings[0].bytes == 2 * kMiB);
  CHECK(findings[0].headline.rfind("Held by PyTorch's CUDA caching allocator:", 0) == 0);
  CHECK(findings[1].kind == report::FindingKind::Leak);  // the program's own stays its leak
  CHECK(findings[1].bytes == kMiB);
}

TEST_CASE("a segment recorded before its cudaMalloc (a history merged by time) owns it all the same") {
  SyntheticTrace t;
  t.pool(2, "CuPy's memory pool", MemorySource::CupyPool)
      .segment(2, 0x200000, kMiB)
      .alloc(Api::cudaMalloc, 0x200000, kMiB)
      .end();
  const ReplayResult r = replay(t.trace());
  CHECK(leak_at(r, 0x200000).owner.held_on_purpose());
}

TEST_CASE("a pool that records no segments (XLA's) owns the CUDA allocation its blocks lie in") {
  SyntheticTrace t;
  t.pool(4, "", MemorySource::XlaBfc)
      .alloc(Api::cuMemAlloc, 0x400000, 8 * kMiB)  // BFC's region
      .block(Api::xlaBufferAlloc, 4, 0x400000, kMiB)
      .block(Api::xlaBufferFree, 4, 0x400000)
      .alloc(Api::cuMemAlloc, 0x1000000, kMiB)  // no block was ever handed out of it
      .end();
  const ReplayResult r = replay(t.trace());
  CHECK(leak_at(r, 0x400000).owner.is_reserve());
  CHECK(leak_at(r, 0x400000).owner.source == MemorySource::XlaBfc);
  CHECK(leak_at(r, 0x1000000).owner.holding == Holding::Program);
  const auto findings = leaks_without_rules(t.trace());
  REQUIRE(findings.size() == 2);
  CHECK(findings[0].kind == report::FindingKind::HeldByAllocator);
  CHECK(findings[0].headline.find("XLA's GPU allocator") != std::string::npos);
  CHECK(findings[1].kind == report::FindingKind::Leak);
}

TEST_CASE("a program's own pool (an NVTX heap) has a reserve too, and leaking it is the program's leak") {
  SyntheticTrace t;
  t.pool(1, "requests")
      .alloc(Api::cudaMalloc, 0x10000, kMiB)
      .segment(1, 0x10000, kMiB)
      .block(Api::nvtxMemRegionsRegister, 1, 0x10000, 512)
      .block(Api::nvtxMemRegionsUnregister, 1, 0x10000)
      .end();
  const ReplayResult r = replay(t.trace());
  const Owner owner = leak_at(r, 0x10000).owner;
  CHECK(owner.is_reserve());
  CHECK(owner.source == MemorySource::NvtxHeap);
  CHECK_FALSE(owner.held_on_purpose());
  const auto findings = leaks_without_rules(t.trace());
  REQUIRE(findings.size() == 1);
  CHECK(findings[0].kind == report::FindingKind::Leak);
}

TEST_CASE("blocks are owned by their pool, by their own events, and a released reserve stays the pool's") {
  SyntheticTrace t;
  t.pool(2, "CuPy's memory pool", MemorySource::CupyPool)
      .alloc(Api::cudaMalloc, 0x200000, kMiB)
      .segment(2, 0x200000, kMiB)
      .block(Api::cupyPoolMalloc, 2, 0x200000, 4096)
      .release(Api::cudaFree, 0x200000)
      .end();
  const ReplayResult r = replay(t.trace());
  const ProcessTrace& trace = t.trace();
  auto made_by = [&](Api api) -> const MemoryEvent& {
    for (const Event& e : trace.events) {
      if (e.is_memory() && e.memory().api == api) return e.memory();
    }
    FAIL("no such event");
    return trace.events.front().memory();
  };
  const MemoryEvent& cuda = made_by(Api::cudaMalloc);
  const MemoryEvent& block = made_by(Api::cupyPoolMalloc);
  CHECK(r.ownership.owner(cuda).is_reserve());  // released: still known as the pool's
  const Owner b = r.ownership.owner(block);
  CHECK(b.is_block());
  CHECK(b.pool == 2);
  CHECK(b.framework());
  CHECK(owner_of_event(block, trace.pools).is_block());
  CHECK(owner_of_event(cuda, trace.pools).holding == Holding::Program);  // an event alone knows no reserve
}

TEST_CASE("a launch argument is judged by the owner pools first: a returned block inside a live segment is stale") {
  SyntheticTrace t;
  t.pool(2, "CuPy's memory pool", MemorySource::CupyPool)
      .alloc(Api::cudaMalloc, 0x200000, kMiB)
      .segment(2, 0x200000, kMiB)
      .block(Api::cupyPoolMalloc, 2, 0x200000, 4096)
      .launch_param("k", 0, 0x200010, trace::LaunchProblem::Misaligned, 16)
      .block(Api::cupyPoolFree, 2, 0x200000)
      .launch_param("k", 0, 0x200010, trace::LaunchProblem::Misaligned, 16)
      .launch_param("k", 0, 0x280000, trace::LaunchProblem::Misaligned, 16)
      .end();
  const ReplayResult r = replay(t.trace());
  REQUIRE(r.launch_params.size() == 3);
  REQUIRE(r.launch_params[0].live);
  CHECK(r.launch_params[0].live->key == 0x200000);  // the block, not the segment
  CHECK(is_block_op(r.launch_params[0].live->api));
  CHECK(r.launch_params[0].offset == 0x10);
  CHECK_FALSE(r.launch_params[1].live);  // the block went back: stale, though its segment is live
  REQUIRE(r.launch_params[1].freed);
  CHECK(r.launch_params[1].freed->key == 0x200000);
  REQUIRE(r.launch_params[2].live);  // no block there: the pool's reserve
  CHECK(r.launch_params[2].live->api == Api::cudaMalloc);
  CHECK(r.launch_params[2].offset == 0x80000);
}

TEST_CASE("growth by Python line leaves a pool's reserve out: its blocks say where the memory went") {
  SyntheticTrace t;
  t.python_stack(1, {{"train.py", 10, "<module>"}});
  t.pool(3, "", MemorySource::TorchCaching);
  // Each step takes a segment for whichever line needed it first: no site of its own.
  for (uint64_t i = 0; i < 8; ++i) {
    const uint64_t base = 0x10000000 + i * 4 * kMiB;
    t.alloc(Api::cudaMalloc, base, 4 * kMiB).segment(3, base, 4 * kMiB);
    t.alloc_from_python(Api::torchBlockAlloc, base, kMiB, 1).after_launches(i * 1000 + 1);
  }
  t.sample(0, 0, 8000).end();
  ProcessTrace trace = t.trace();
  for (Event& e : trace.events) {
    if (e.is_memory() && e.memory().api == Api::torchBlockAlloc) e.memory().pool = 3;
  }
  Symbolizer symbolizer;
  StackResolver stacks(trace, symbolizer);
  const ReplayResult r = replay(trace);
  const auto findings = growth_findings(trace, r.leaks, stacks);
  REQUIRE(findings.size() == 1);
  CHECK(findings[0].api == "CUDACachingAllocator::malloc");
  CHECK(findings[0].count == 8);
}
