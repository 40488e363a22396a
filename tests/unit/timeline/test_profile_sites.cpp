// --pprof's sites over a synthetic run: what each site allocated, holds at the end and held at its
// device's peak, pinned host memory among them, in a stable order.
#include <doctest/doctest.h>

#include "profile_sites.h"
#include "site_names.h"
#include "symbolizer.h"
#include "synthetic_trace.h"

using namespace cuaudit;
using cuaudit::testing::SyntheticTrace;

namespace {
constexpr uint64_t MiB = 1 << 20;
}  // namespace

TEST_CASE("profile sites: allocated over the run, held at the end and at the peak, host memory at device -1") {
  SyntheticTrace s;
  // Stack 1 allocates 3 x 100 MiB and frees them; stack 2 keeps 2 x 300 MiB until the peak, then
  // frees one; stack 3 keeps 50 MiB; stack 4 pins 8 MiB of host memory.
  s.alloc(Api::cudaMalloc, 0x1000000, 100 * MiB, 1).alloc(Api::cudaMalloc, 0x9000000, 100 * MiB, 1);
  s.alloc(Api::cudaMalloc, 0x11000000, 100 * MiB, 1).sample(300 * MiB);
  s.release(Api::cudaFree, 0x1000000).release(Api::cudaFree, 0x9000000).release(Api::cudaFree, 0x11000000);
  s.alloc(Api::cudaMalloc, 0x20000000, 300 * MiB, 2).alloc(Api::cudaMalloc, 0x40000000, 300 * MiB, 2);
  s.alloc(Api::cudaMalloc, 0x60000000, 50 * MiB, 3).alloc(Api::cudaMallocHost, 0x70000000, 8 * MiB, 4);
  s.sample(650 * MiB);
  s.release(Api::cudaFree, 0x20000000).sample(350 * MiB);
  const ProcessTrace& t = s.end().trace();

  Symbolizer symbolizer;
  StackResolver stacks(t, symbolizer);
  report::Timeline timeline;
  SiteHistory history(t);
  TimelineObserver observer(t, history, timeline);
  ObserverList observers;
  observers.add(&history);
  observers.add(&observer);
  replay(t, &observers);
  history.finish();
  report::Report report;
  add_profile_sites(t, history, observer, stacks, report);
  const std::vector<report::ProfileSite>& sites = report.profile_sites;
  CHECK_FALSE(report.profile_sites_sampled);

  REQUIRE(sites.size() == 4);
  // Biggest at the end first: stack 2 (300 MiB), stack 3, the pinned buffer, stack 1 (nothing left).
  CHECK(sites[0].live_bytes == 300 * MiB);
  CHECK(sites[0].live_count == 1);
  CHECK(sites[0].allocated_bytes == 600 * MiB);
  CHECK(sites[0].allocated_count == 2);
  CHECK(sites[0].peak_bytes == 600 * MiB);
  CHECK(sites[0].peak_count == 2);
  CHECK(sites[0].api == "cudaMalloc");
  CHECK(sites[0].pid == t.pid);
  CHECK(sites[1].live_bytes == 50 * MiB);
  CHECK(sites[1].peak_bytes == 50 * MiB);
  CHECK(sites[2].device == trace::kHostDevice);
  CHECK(sites[2].api == "cudaMallocHost");
  CHECK(sites[2].live_bytes == 8 * MiB);
  CHECK(sites[2].peak_bytes == 0);  // the devices' peaks are the devices' memory
  CHECK(sites[3].live_bytes == 0);
  CHECK(sites[3].allocated_bytes == 300 * MiB);
  CHECK(sites[3].allocated_count == 3);
  CHECK(sites[3].peak_bytes == 0);  // all freed before the peak

  // Each site is named as the charts name it.
  const SiteName name = name_site(t, SiteHistory::Key{0, 2, 0, Api::cudaMalloc}, stacks);
  CHECK(name.api == "cudaMalloc");
  CHECK(name.site.empty());
}
