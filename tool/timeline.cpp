#include "timeline.h"

#include <algorithm>
#include <map>
#include <tuple>

#include "replay.h"

namespace cuaudit {
namespace {

// Pass 1: each sample with the tracked bytes, and which sample is each device's peak.
class SampleCollector : public ReplayObserver {
 public:
  explicit SampleCollector(const ProcessTrace& trace, report::Timeline& timeline)
      : trace_(trace), timeline_(timeline), state_(trace.device_states.begin()) {}
  void on_sample(const MemorySample& s, const DeviceHoldings& held,
                 const std::function<void(const std::function<void(const MemoryEvent&)>&)>&) override {
    report::TimelineSample out;
    out.t = trace_.seconds_since_start(s.time_ns);
    out.pid = trace_.pid;
    out.device = s.device;
    out.used = s.total_bytes > s.free_bytes ? s.total_bytes - s.free_bytes : 0;
    out.free = s.free_bytes;
    out.tracked = held.total;
    for (size_t f = 0; f < kMemoryFamilies; ++f) {
      if (held.by_family[f]) out.families.emplace_back(family_key(static_cast<MemoryFamily>(f)), held.by_family[f]);
    }
    // The sampler writes the device's pool right after its sample (once the program uses pools).
    for (; state_ != trace_.device_states.end() && state_->seq < s.seq; ++state_) {
    }
    for (auto d = state_; d != trace_.device_states.end() && d->seq <= s.seq + 2; ++d) {
      if (d->device == s.device && d->pool_reserved && !d->at_failed_allocation) {
        out.pool_reserved = d->pool_reserved;
        out.pool_used = d->pool_used;
        out.pool_reserved_high = d->pool_reserved_high;
        out.pool_used_high = d->pool_used_high;
        break;
      }
    }
    timeline_.samples.push_back(out);
    auto& peak = peaks_[s.device];
    if (!peak.first || out.used > peak.second.used) peak = {s.seq, out};
  }
  std::map<int, std::pair<uint64_t, report::TimelineSample>> peaks_;  // device -> (sample seq, sample)

 private:
  const ProcessTrace& trace_;
  report::Timeline& timeline_;
  std::vector<DeviceState>::const_iterator state_;
};

// Pass 2: at each peak sample, the live allocations on that device, by site.
class PeakSites : public ReplayObserver {
 public:
  explicit PeakSites(const std::map<int, std::pair<uint64_t, report::TimelineSample>>& peaks) : peaks_(peaks) {}
  void on_sample(const MemorySample& s, const DeviceHoldings&,
                 const std::function<void(const std::function<void(const MemoryEvent&)>&)>& live) override {
    auto peak = peaks_.find(s.device);
    if (peak == peaks_.end() || peak->second.first != s.seq) return;
    auto& sites = sites_[s.device];
    live([&](const MemoryEvent& a) {
      if (a.device != s.device || !owns_memory(api_info(a.api).family)) return;
      auto& site = sites[{a.stack_id, static_cast<uint16_t>(a.api)}];
      site.first += a.bytes;
      ++site.second;
    });
  }
  // device -> (stack, api) -> (bytes, count)
  std::map<int, std::map<std::pair<uint64_t, uint16_t>, std::pair<uint64_t, uint64_t>>> sites_;

 private:
  const std::map<int, std::pair<uint64_t, report::TimelineSample>>& peaks_;
};

}  // namespace

void build_timeline(const ProcessTrace& trace, StackResolver& stacks, report::Timeline& timeline, size_t top_sites) {
  if (trace.samples.empty()) return;
  SampleCollector collector(trace, timeline);
  replay(trace, &collector);
  PeakSites at_peak(collector.peaks_);
  replay(trace, &at_peak);
  for (const auto& [device, peak] : collector.peaks_) {
    report::DevicePeak p;
    p.pid = trace.pid;
    p.device = device;
    p.t = peak.second.t;
    p.used = peak.second.used;
    p.tracked = peak.second.tracked;
    p.families = peak.second.families;
    for (const auto& [key, held] : at_peak.sites_[device]) {
      report::PeakSite site;
      const Api api = stacks.api_called(key.first, static_cast<Api>(key.second));
      site.api = std::string(api_info(api).name);
      site.bytes = held.first;
      site.count = held.second;
      site.stack = stacks.user_stack(key.first);
      p.sites.push_back(std::move(site));
    }
    std::sort(p.sites.begin(), p.sites.end(), [](const auto& a, const auto& b) { return a.bytes > b.bytes; });
    if (p.sites.size() > top_sites) p.sites.resize(top_sites);
    timeline.peaks.push_back(std::move(p));
  }
}

}  // namespace cuaudit
