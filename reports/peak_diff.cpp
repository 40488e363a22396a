#include "peak_diff.h"

#include <algorithm>
#include <map>
#include <utility>

#include <fmt/format.h>

#include "function_names.h"
#include "report_model.h"
#include "text_helpers.h"

namespace cuaudit::report {
namespace {

// The highest peak of each device over the report's processes (the pids differ from run to run).
std::map<int, const DevicePeak*> highest_peaks(const Report& r) {
  std::map<int, const DevicePeak*> out;
  for (const DevicePeak& p : r.timeline.peaks) {
    const DevicePeak*& best = out[p.device];
    if (!best || p.used > best->used) best = &p;
  }
  return out;
}

// Reports written before sites had short names: named from their frames, as the tool names them.
std::string name_of(const PeakSite& s) { return s.site.empty() ? stack_site_name(s.stack) : s.site; }

std::string signed_bytes(uint64_t before, uint64_t after) {
  return after >= before ? "+" + human_bytes(after - before) : "-" + human_bytes(before - after);
}

}  // namespace

std::vector<DevicePeakChange> peak_changes(const Report& before, const Report& after) {
  const auto old_peaks = highest_peaks(before), new_peaks = highest_peaks(after);
  std::map<int, DevicePeakChange> out;
  for (const auto& [peaks, is_after] : {std::pair{&old_peaks, false}, std::pair{&new_peaks, true}}) {
    for (const auto& [device, peak] : *peaks) {
      DevicePeakChange& c = out[device];
      c.device = device;
      (is_after ? c.used_after : c.used_before) = peak->used;
      (is_after ? c.tracked_after : c.tracked_before) = peak->tracked;
      for (const PeakSite& s : peak->sites) {
        const std::string name = name_of(s);
        auto it = std::find_if(c.sites.begin(), c.sites.end(),
                               [&](const SitePeakChange& x) { return x.api == s.api && x.site == name; });
        if (it == c.sites.end()) it = c.sites.insert(c.sites.end(), SitePeakChange{s.api, name, 0, 0});
        uint64_t& sum = is_after ? it->after : it->before;
        sum = saturating_add(sum, s.bytes);
      }
    }
  }
  std::vector<DevicePeakChange> changes;
  for (auto& [device, c] : out) {
    c.sites.erase(
        std::remove_if(c.sites.begin(), c.sites.end(), [](const SitePeakChange& s) { return s.before == s.after; }),
        c.sites.end());
    const auto change = [](const SitePeakChange& s) {
      return s.after > s.before ? s.after - s.before : s.before - s.after;
    };
    std::stable_sort(c.sites.begin(), c.sites.end(),
                     [&](const SitePeakChange& a, const SitePeakChange& b) { return change(a) > change(b); });
    changes.push_back(std::move(c));
  }
  return changes;
}

std::string render_peak_diff(const std::vector<DevicePeakChange>& changes, size_t limit) {
  std::string out;
  for (const DevicePeakChange& c : changes) {
    out += fmt::format("==cuaudit diff== peak on device {}: {} in use (was {}, {}); the program held {} (was {}, {})\n",
                       c.device, human_bytes(c.used_after), human_bytes(c.used_before),
                       signed_bytes(c.used_before, c.used_after), human_bytes(c.tracked_after),
                       human_bytes(c.tracked_before), signed_bytes(c.tracked_before, c.tracked_after));
    if (c.sites.empty()) out += "==cuaudit diff==   no site holds more or less at the peak than before\n";
    for (size_t i = 0; i < c.sites.size() && i < limit; ++i) {
      const SitePeakChange& s = c.sites[i];
      out += fmt::format("==cuaudit diff==   {} at {} ({}): {} at the peak, was {}\n", signed_bytes(s.before, s.after),
                         visible(s.site), visible(s.api), human_bytes(s.after), human_bytes(s.before));
    }
    if (c.sites.size() > limit) out += fmt::format("==cuaudit diff==   and {} more site(s)\n", c.sites.size() - limit);
  }
  return out;
}

}  // namespace cuaudit::report
