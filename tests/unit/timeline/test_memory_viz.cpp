// --memory-viz's snapshot over synthetic runs: a pool's segments tiled by its blocks and the gaps
// between them, plain allocations as segments of one block, PyTorch's trace actions in order, the
// oldest entries left out beyond the limit, and the pickle that Python reads back.
#include <doctest/doctest.h>

#include "export_collectors.h"
#include "memory_viz.h"
#include "symbolizer.h"
#include "synthetic_trace.h"

using namespace cuaudit;
using cuaudit::testing::SyntheticTrace;
using report::VizAction;

namespace {

constexpr uint64_t MiB = 1 << 20;

std::optional<report::MemoryViz> collect(const ProcessTrace& t, size_t max_entries = 1000) {
  Symbolizer symbolizer;
  StackResolver stacks(t, symbolizer);
  MemoryVizCollector collector(t, stacks, max_entries);
  replay(t, &collector);
  return collector.finish();
}

std::vector<VizAction> actions(const report::MemoryViz& v) {
  std::vector<VizAction> out;
  for (const report::VizEntry& e : v.entries) out.push_back(e.action);
  return out;
}

}  // namespace

TEST_CASE("memory viz: a pool's segment tiled by its blocks and free gaps, a plain allocation a segment of its own") {
  SyntheticTrace t;
  t.pool(1, "PyTorch's caching allocator", MemorySource::TorchCaching);
  t.alloc(Api::cudaMalloc, 0x10000000, 20 * MiB, 3).segment(1, 0x10000000, 20 * MiB);
  t.block(Api::torchBlockAlloc, 1, 0x10000000, 4 * MiB, 7).block(Api::torchBlockAlloc, 1, 0x10400000, 4 * MiB, 8);
  t.block(Api::torchBlockAlloc, 1, 0x10c00000, 2 * MiB, 8).block(Api::torchBlockFree, 1, 0x10400000);
  t.alloc(Api::cudaMalloc, 0x20000000, 2 * MiB, 4).alloc(Api::cudaMallocHost, 0x30000000, 1 * MiB, 5);
  const std::optional<report::MemoryViz> v = collect(t.end().trace());
  REQUIRE(v);
  REQUIRE(v->segments.size() == 2);  // host memory is no device's
  const report::VizSegment& pool = v->segments[0];
  CHECK(pool.pool);
  CHECK(pool.address == 0x10000000);
  CHECK(pool.size == 20 * MiB);
  REQUIRE(pool.blocks.size() == 4);
  CHECK((pool.blocks[0].active && pool.blocks[0].size == 4 * MiB));
  CHECK((!pool.blocks[1].active && pool.blocks[1].address == 0x10400000 && pool.blocks[1].size == 8 * MiB));
  CHECK((pool.blocks[2].active && pool.blocks[2].address == 0x10c00000 && pool.blocks[2].size == 2 * MiB));
  CHECK((!pool.blocks[3].active && pool.blocks[3].size == 6 * MiB));
  CHECK(pool.blocks[0].stack != pool.blocks[2].stack);
  const report::VizSegment& plain = v->segments[1];
  CHECK_FALSE(plain.pool);
  REQUIRE(plain.blocks.size() == 1);
  CHECK((plain.blocks[0].active && plain.blocks[0].size == 2 * MiB && plain.blocks[0].stack == plain.stack));
  // The pool's cudaMalloc is its segment, not an allocation the program made.
  CHECK(actions(*v) == std::vector<VizAction>{VizAction::SegmentAlloc, VizAction::Alloc, VizAction::Alloc,
                                              VizAction::Alloc, VizAction::FreeRequested, VizAction::FreeCompleted,
                                              VizAction::SegmentAlloc, VizAction::Alloc});
}

TEST_CASE(
    "memory viz: a release ends with free and segment_free, the oldest entries go first, no device memory no "
    "snapshot") {
  SyntheticTrace t;
  for (uint64_t i = 0; i < 10; ++i)
    t.alloc(Api::cudaMalloc, 0x1000 + i * 0x1000, 4096, 1).release(Api::cudaFree, 0x1000 + i * 0x1000);
  const std::optional<report::MemoryViz> all = collect(t.end().trace());
  REQUIRE(all);
  CHECK(all->entries.size() == 50);
  CHECK(all->segments.empty());
  const std::vector<VizAction> seen = actions(*all);
  CHECK(std::vector<VizAction>(seen.begin(), seen.begin() + 5) ==
        std::vector<VizAction>{VizAction::SegmentAlloc, VizAction::Alloc, VizAction::FreeRequested,
                               VizAction::FreeCompleted, VizAction::SegmentFree});
  const std::optional<report::MemoryViz> last = collect(t.trace(), 7);
  REQUIRE(last);
  CHECK(last->entries.size() == 7);
  CHECK(last->entries_left_out == 43);
  CHECK(last->entries.back().address == 0x1000 + 9 * 0x1000);

  SyntheticTrace host;
  host.alloc(Api::cudaMallocHost, 0x1000, 4096, 1);
  CHECK_FALSE(collect(host.end().trace()));
}

TEST_CASE("export collectors: each output only when asked for, the snapshot of the first process with device memory") {
  SyntheticTrace t;
  t.alloc(Api::cudaMalloc, 0x1000, 4096, 1).alloc(Api::cudaMalloc, 0x3000, 8192, 2).release(Api::cudaFree, 0x1000);
  const ProcessTrace& trace = t.end().trace();
  const auto run = [&](const ExportRequests& requests, report::Report& report) {
    Symbolizer symbolizer;
    StackResolver stacks(trace, symbolizer);
    SiteHistory history(trace);
    TimelineObserver timeline(trace, history, report.timeline);
    ExportCollectors exports(trace, stacks, requests, report);
    ObserverList observers;
    observers.add(&history);
    exports.add_to(observers);
    const ReplayResult result = replay(trace, &observers);
    history.finish();
    exports.finish(result, history, timeline);
  };
  report::Report none;
  run(ExportRequests{}, none);
  CHECK(none.allocation_spans.empty());
  CHECK(none.profile_sites.empty());
  CHECK_FALSE(none.memory_viz);

  report::Report all;
  run(ExportRequests{100, true, 100}, all);
  CHECK(all.allocation_spans.size() == 2);
  CHECK(all.profile_sites.size() == 2);
  REQUIRE(all.memory_viz);
  CHECK(all.memory_viz->segments.size() == 1);
  // A second process keeps the first one's snapshot (the viewer shows one process).
  all.memory_viz->pid = 1;
  run(ExportRequests{0, false, 100}, all);
  CHECK(all.memory_viz->pid == 1);
}
