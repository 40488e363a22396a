// The memory timeline of a process: the driver's view of each device over time (cuMemGetInfo
// samples recorded by the injection) beside what the program's tracked allocations held, and at
// each device's peak, the allocation sites that held the most.
#pragma once

#include <cstddef>

#include <map>

#include "replay.h"
#include "report_model.h"
#include "stack_resolver.h"
#include "trace_model.h"

namespace cuaudit {

// Collects the timeline during the replay: each sample with what the program held then, and at
// each device's peak the live allocations by site (kept up to date as allocations come and go, so
// a peak costs a copy of the sites, not a visit of every live allocation).
class TimelineObserver : public ReplayObserver {
 public:
  TimelineObserver(const ProcessTrace& trace, report::Timeline& timeline);
  void on_sample(const MemorySample& s, const DeviceHoldings& held, const LiveVisitor& live) override;
  void on_live(const MemoryEvent& a) override;
  void on_gone(const MemoryEvent& a) override;
  // Adds each device's peak, with its `top_sites` biggest sites, to the timeline.
  void finish(StackResolver& stacks, size_t top_sites = 5);

  using SiteKey = std::pair<uint64_t, uint16_t>;  // (stack, API)
  struct Held {
    uint64_t bytes = 0, count = 0;
  };
  // What is live now on `device`, by site.
  const std::map<SiteKey, Held>& live_sites(int32_t device) { return sites_[device]; }

 private:
  struct Peak {
    bool seen = false, sites_taken = false;
    report::TimelineSample sample;
    uint64_t sites_used = 0;  // `used` of the sample the sites were copied at
    std::map<SiteKey, Held> sites;
  };
  const ProcessTrace& trace_;
  report::Timeline& timeline_;
  size_t state_ = 0;  // the first device state not yet behind the samples
  std::map<int32_t, std::map<SiteKey, Held>> sites_;
  std::map<int32_t, Peak> peaks_;
};

// Appends `trace`'s samples and peaks to `timeline` (nothing when the trace has no samples).
void build_timeline(const ProcessTrace& trace, StackResolver& stacks, report::Timeline& timeline, size_t top_sites = 5);

}  // namespace cuaudit
