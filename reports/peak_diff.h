// `cuaudit diff OLD NEW` beside the findings: peak memory by site (issue 35: "which line holds more
// at the peak than before"), per device, from the two reports' timeline peaks.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "report_model.h"

namespace cuaudit::report {

struct SitePeakChange {
  std::string api, site;  // site: its short name (PeakSite::site, or stack_site_name in older reports)
  uint64_t before = 0, after = 0;
};

struct DevicePeakChange {
  int device = 0;
  uint64_t used_before = 0, used_after = 0;        // in use on the device at each run's peak
  uint64_t tracked_before = 0, tracked_after = 0;  // of it, what the program's allocations held
  std::vector<SitePeakChange> sites;               // those that changed, the largest change first
};

// One entry per device either report has a peak for (a device's highest peak over its processes).
std::vector<DevicePeakChange> peak_changes(const Report& before, const Report& after);

// "==cuaudit diff== peak on device 0: 1.5 GiB in use (was 1.2 GiB, +300.0 MiB) ..." and a line per
// site whose bytes at the peak changed (at most `limit`); "" when neither report has a timeline.
std::string render_peak_diff(const std::vector<DevicePeakChange>& changes, size_t limit = 8);

}  // namespace cuaudit::report
