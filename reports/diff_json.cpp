#include "diff_json.h"

#include <nlohmann/json.hpp>

#include "json_report.h"

namespace cuaudit::report {

using nlohmann::json;

namespace {

// Signed, so that a consumer need not subtract two unsigned figures itself.
json change(uint64_t before, uint64_t after) {
  return after >= before ? json(after - before) : json(-static_cast<int64_t>(before - after));
}

json peak_json(const DevicePeakChange& c) {
  json sites = json::array();
  for (const SitePeakChange& s : c.sites) {
    sites.push_back({{"api", s.api},
                     {"site", s.site},
                     {"before", s.before},
                     {"after", s.after},
                     {"change", change(s.before, s.after)}});
  }
  return {{"device", c.device},
          {"used_before", c.used_before},
          {"used_after", c.used_after},
          {"used_change", change(c.used_before, c.used_after)},
          {"tracked_before", c.tracked_before},
          {"tracked_after", c.tracked_after},
          {"tracked_change", change(c.tracked_before, c.tracked_after)},
          {"sites", std::move(sites)}};
}

}  // namespace

std::string render_diff_json(const Report& before, const Report& after, const std::vector<DevicePeakChange>& peaks,
                             const std::string& before_name, const std::string& after_name) {
  json news = json::array(), still = json::array();
  for (const Finding& f : after.findings) {
    if (f.suppressed) continue;
    (f.baseline == BaselineStatus::StillPresent ? still : news).push_back(finding_to_json(f));
  }
  json fixed = after.baseline ? json(after.baseline->fixed) : json::array();
  json devices = json::array();
  for (const DevicePeakChange& c : peaks) devices.push_back(peak_json(c));
  const json doc = {{"schema", "cuaudit.diff.v1"},
                    {"before", {{"report", before_name}, {"incomplete", before.incomplete}}},
                    {"after", {{"report", after_name}, {"incomplete", after.incomplete}}},
                    {"new", std::move(news)},
                    {"still_present", std::move(still)},
                    {"fixed", std::move(fixed)},
                    {"peaks", std::move(devices)}};
  return doc.dump(2) + "\n";
}

}  // namespace cuaudit::report
