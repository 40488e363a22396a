// The timeline over a synthetic run whose memory rises and falls in two phases.
#include <doctest/doctest.h>

#include "symbolizer.h"
#include "synthetic_trace.h"
#include "timeline.h"

using namespace cuaudit;
using cuaudit::testing::SyntheticTrace;

namespace {
constexpr uint64_t MiB = 1 << 20;
constexpr uint64_t kContexts = 500 * MiB;  // what the driver uses besides the program's memory
}  // namespace

TEST_CASE("samples carry what the program held then, each device's peak names the sites that held the most") {
  SyntheticTrace s;
  // Phase 1: 3 x 100 MiB from stack 1, then released.
  s.alloc(Api::cudaMalloc, 0x1000000, 100 * MiB, 1).alloc(Api::cudaMalloc, 0x9000000, 100 * MiB, 1);
  s.alloc(Api::cudaMalloc, 0x11000000, 100 * MiB, 1).sample(kContexts + 300 * MiB);
  s.release(Api::cudaFree, 0x1000000).release(Api::cudaFree, 0x9000000).release(Api::cudaFree, 0x11000000);
  s.sample(kContexts);
  // Phase 2: 2 x 300 MiB from stack 2 and 50 MiB from stack 3; pinned host memory is no device's.
  s.alloc(Api::cudaMalloc, 0x20000000, 300 * MiB, 2).alloc(Api::cudaMalloc, 0x40000000, 300 * MiB, 2);
  s.alloc(Api::cudaMalloc, 0x60000000, 50 * MiB, 3).alloc(Api::cudaMallocHost, 0x70000000, 999 * MiB, 4);
  s.sample(kContexts + 650 * MiB);
  s.release(Api::cudaFree, 0x20000000).sample(kContexts + 350 * MiB);
  const ProcessTrace& t = s.end().trace();

  Symbolizer symbolizer;
  StackResolver stacks(t, symbolizer);
  report::Timeline timeline;
  build_timeline(t, stacks, timeline);
  REQUIRE(timeline.samples.size() == 4);
  CHECK(timeline.samples[0].tracked == 300 * MiB);
  CHECK(timeline.samples[1].tracked == 0);
  CHECK(timeline.samples[2].tracked == 650 * MiB);
  CHECK(timeline.samples[2].used == kContexts + 650 * MiB);
  CHECK(timeline.samples[3].tracked == 350 * MiB);
  CHECK(timeline.samples[1].t < timeline.samples[2].t);
  REQUIRE(timeline.peaks.size() == 1);
  const auto& peak = timeline.peaks[0];
  CHECK(peak.used == kContexts + 650 * MiB);
  CHECK(peak.tracked == 650 * MiB);
  CHECK(peak.t == doctest::Approx(timeline.samples[2].t));
  REQUIRE(peak.sites.size() == 2);
  CHECK(peak.sites[0].api == "cudaMalloc");
  CHECK(peak.sites[0].bytes == 600 * MiB);
  CHECK(peak.sites[0].count == 2);
  CHECK(peak.sites[1].bytes == 50 * MiB);
}

TEST_CASE("a run without samples has no timeline") {
  const ProcessTrace t = SyntheticTrace().alloc(Api::cudaMalloc, 0x1000, 10).end().trace();
  Symbolizer symbolizer;
  StackResolver stacks(t, symbolizer);
  report::Timeline timeline;
  build_timeline(t, stacks, timeline);
  CHECK(timeline.samples.empty());
  CHECK(timeline.peaks.empty());
}

TEST_CASE("what the program holds is also told by allocation family") {
  SyntheticTrace s;
  s.alloc(Api::cudaMalloc, 0x1000000, 100 * MiB).alloc(Api::cudaMallocAsync, 0x9000000, 20 * MiB);
  s.alloc(Api::cudaMallocManaged, 0x11000000, 5 * MiB).alloc(Api::cudaMallocHost, 0x70000000, 999 * MiB);
  s.sample(kContexts + 125 * MiB);
  const ProcessTrace& t = s.end().trace();
  Symbolizer symbolizer;
  StackResolver stacks(t, symbolizer);
  report::Timeline timeline;
  build_timeline(t, stacks, timeline);
  REQUIRE(timeline.samples.size() == 1);
  const std::vector<std::pair<std::string, uint64_t>> want = {
      {"device", 100 * MiB}, {"managed", 5 * MiB}, {"stream_ordered", 20 * MiB}};  // pinned host memory is no device's
  CHECK(timeline.samples[0].families == want);
  REQUIRE(timeline.peaks.size() == 1);
  CHECK(timeline.peaks[0].families == want);
}
