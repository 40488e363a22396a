#include "profile_sites.h"

#include <algorithm>
#include <set>
#include <tuple>
#include <unordered_map>

#include "site_names.h"

namespace cuaudit {

void add_profile_sites(const ProcessTrace& trace, const SiteHistory& history, const TimelineObserver& timeline,
                       StackResolver& stacks, report::Report& report) {
  report.profile_sites_sampled |= trace.stack_sampling.on();
  std::vector<report::ProfileSite>& out = report.profile_sites;
  const size_t first = out.size();
  std::unordered_map<SiteHistory::Key, const TimelineObserver::Held*, SiteHistory::KeyHash> at_peak;
  std::set<int32_t> devices;
  for (const auto& [key, site] : history.sites()) devices.insert(key.device);
  for (const int32_t device : devices) {
    if (const auto* peak = timeline.peak_sites(device)) {
      for (const TimelineObserver::Held& held : *peak) at_peak.emplace(held.key, &held);
    }
  }
  for (const auto& [key, site] : history.sites()) {
    if (!site.allocated_256ths && !site.count_256ths) continue;  // a block's stack that only ever gave memory back
    report::ProfileSite p;
    p.pid = trace.pid;
    p.device = key.device;
    p.allocated_count = site.allocated_count();
    p.allocated_bytes = site.allocated_bytes;
    p.live_count = site.count();
    p.live_bytes = site.bytes;
    if (const auto held = at_peak.find(key); held != at_peak.end()) {
      p.peak_count = held->second->count;
      p.peak_bytes = held->second->bytes;
    }
    SiteName name = name_site(trace, key, stacks);
    p.api = std::move(name.api);
    p.stack = std::move(name.stack);
    p.site = std::move(name.site);
    out.push_back(std::move(p));
  }
  // The hash map's order is no order: biggest at the end first, then by name and frames, so that
  // two runs of one program write the same profile.
  const auto frame_less = [](const report::Frame& a, const report::Frame& b) {
    return std::tie(a.function, a.file, a.line, a.module_offset) <
           std::tie(b.function, b.file, b.line, b.module_offset);
  };
  std::sort(out.begin() + static_cast<std::ptrdiff_t>(first), out.end(),
            [&](const report::ProfileSite& a, const report::ProfileSite& b) {
              if (std::tie(a.live_bytes, a.peak_bytes, a.allocated_bytes) !=
                  std::tie(b.live_bytes, b.peak_bytes, b.allocated_bytes))
                return std::tie(a.live_bytes, a.peak_bytes, a.allocated_bytes) >
                       std::tie(b.live_bytes, b.peak_bytes, b.allocated_bytes);
              if (std::tie(a.device, a.api, a.site) != std::tie(b.device, b.api, b.site))
                return std::tie(a.device, a.api, a.site) < std::tie(b.device, b.api, b.site);
              return std::lexicographical_compare(a.stack.begin(), a.stack.end(), b.stack.begin(), b.stack.end(),
                                                  frame_less);
            });
}

}  // namespace cuaudit
