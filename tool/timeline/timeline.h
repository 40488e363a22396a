// The memory timeline of a process: the driver's view of each device over time (cuMemGetInfo
// samples recorded by the injection) beside what the program's tracked allocations held, and at
// each device's peak, the allocation sites that held the most.
#pragma once

#include <cstddef>

#include <map>

#include "replay.h"
#include "report_model.h"
#include "site_history.h"
#include "stack_resolver.h"
#include "trace_model.h"

namespace cuaudit {

// Collects the timeline during the replay: each sample with what the program held then, and at
// each device's peak the live allocations by site (from the SiteHistory that observes the same
// replay before it, so a peak costs a copy of the sites, not a visit of every live allocation).
class TimelineObserver : public ReplayObserver {
 public:
  TimelineObserver(const ProcessTrace& trace, const SiteHistory& sites, report::Timeline& timeline);
  void on_sample(const MemorySample& s, const DeviceHoldings& held, const LiveVisitor& live) override;
  void on_pool_sample(const MemorySample& s, uint32_t pool, const PoolUsage& usage, const PoolsView&) override;
  // Adds each device's peak, with its `top_sites` biggest sites, to the timeline.
  void finish(StackResolver& stacks, size_t top_sites = 5);

  // What every site held at a device's peak (none: no sample of that device).
  struct Held {
    SiteHistory::Key key;
    uint64_t bytes = 0, count = 0;
  };
  const std::vector<Held>* peak_sites(int32_t device) const {
    const auto peak = peaks_.find(device);
    return peak == peaks_.end() ? nullptr : &peak->second.sites;
  }

 private:
  struct Peak {
    bool seen = false, sites_taken = false;
    report::TimelineSample sample;
    uint64_t sites_used = 0;  // `used` of the sample the sites were copied at
    std::vector<Held> sites;
  };
  const ProcessTrace& trace_;
  const SiteHistory& sites_;
  report::Timeline& timeline_;
  size_t state_ = 0;  // the first device state not yet behind the samples
  bool has_framework_pool_ = false;
  std::map<int32_t, Peak> peaks_;
  std::map<uint32_t, report::PoolSeries> pools_;  // by pool number; named at finish
};

// Appends, per device, the live bytes of the `top_sites` sites that held the most over the run
// (and of all the others together) at the end of each of the history's buckets: the stacked chart.
void add_site_series(const ProcessTrace& trace, const SiteHistory& history, StackResolver& stacks,
                     report::Timeline& timeline, size_t top_sites = 8);

// Appends `trace`'s samples and peaks to `timeline` (nothing when the trace has no samples).
void build_timeline(const ProcessTrace& trace, StackResolver& stacks, report::Timeline& timeline, size_t top_sites = 5);

}  // namespace cuaudit
