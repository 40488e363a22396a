#include "timeline.h"

#include <algorithm>
#include <map>
#include <tuple>

#include "replay.h"

namespace cuaudit {

TimelineObserver::TimelineObserver(const ProcessTrace& trace, report::Timeline& timeline)
    : trace_(trace), timeline_(timeline) {}

void TimelineObserver::on_live(const MemoryEvent& a) {
  if (a.device < 0 || !owns_memory(api_info(a.api).family)) return;
  Held& h = sites_[a.device][{a.stack_id, static_cast<uint16_t>(a.api)}];
  h.bytes += a.bytes;
  ++h.count;
}

void TimelineObserver::on_gone(const MemoryEvent& a) {
  if (a.device < 0 || !owns_memory(api_info(a.api).family)) return;
  auto& device = sites_[a.device];
  auto it = device.find({a.stack_id, static_cast<uint16_t>(a.api)});
  if (it == device.end()) return;
  it->second.bytes -= std::min(it->second.bytes, a.bytes);
  if (--it->second.count == 0) device.erase(it);
}

void TimelineObserver::on_sample(const MemorySample& s, const DeviceHoldings& held, const LiveVisitor&) {
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
  const auto& states = trace_.device_states;
  for (; state_ < states.size() && states[state_].seq < s.seq; ++state_) {
  }
  for (size_t d = state_; d < states.size() && states[d].seq <= s.seq + 2; ++d) {
    if (states[d].device == s.device && states[d].pool_reserved && !states[d].at_failed_allocation) {
      out.pool_reserved = states[d].pool_reserved;
      out.pool_used = states[d].pool_used;
      out.pool_reserved_high = states[d].pool_reserved_high;
      out.pool_used_high = states[d].pool_used_high;
      break;
    }
  }
  timeline_.samples.push_back(out);
  Peak& peak = peaks_[s.device];
  if (!peak.seen || out.used > peak.sample.used) {
    peak.seen = true;
    peak.sample = out;
    // The sites are copied at a new peak only when it is higher than the copied one by more than
    // 1/256: a program whose memory climbs sets a new peak at every sample, and copying every time
    // would cost a pass over its sites per sample. The sites shown are then those of a sample at
    // most 0.4% below the peak.
    if (!peak.sites_taken || out.used - peak.sites_used > peak.sites_used / 256) {
      peak.sites = sites_[s.device];
      peak.sites_used = out.used;
      peak.sites_taken = true;
    }
  }
}

void TimelineObserver::finish(StackResolver& stacks, size_t top_sites) {
  for (const auto& [device, peak] : peaks_) {
    report::DevicePeak p;
    p.pid = trace_.pid;
    p.device = device;
    p.t = peak.sample.t;
    p.used = peak.sample.used;
    p.tracked = peak.sample.tracked;
    p.families = peak.sample.families;
    // The biggest sites, whose stacks alone are resolved.
    std::vector<std::pair<SiteKey, Held>> biggest(peak.sites.begin(), peak.sites.end());
    std::sort(biggest.begin(), biggest.end(),
              [](const auto& a, const auto& b) { return a.second.bytes > b.second.bytes; });
    if (biggest.size() > top_sites) biggest.resize(top_sites);
    for (const auto& [key, held] : biggest) {
      report::PeakSite site;
      const Api api = stacks.api_called(key.first, static_cast<Api>(key.second));
      site.api = std::string(api_info(api).name);
      site.bytes = held.bytes;
      site.count = held.count;
      site.stack = stacks.user_stack(key.first);
      p.sites.push_back(std::move(site));
    }
    timeline_.peaks.push_back(std::move(p));
  }
}

void build_timeline(const ProcessTrace& trace, StackResolver& stacks, report::Timeline& timeline, size_t top_sites) {
  if (trace.samples.empty()) return;
  TimelineObserver observer(trace, timeline);
  replay(trace, &observer);
  observer.finish(stacks, top_sites);
}

}  // namespace cuaudit
