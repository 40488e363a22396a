// `cuaudit diff OLD NEW --json FILE`: the comparison as one JSON document (schema cuaudit.diff.v1,
// docs/JSON.md), for a CI step or a dashboard that reads what the text lines say: the new, still
// present and fixed findings and each device's peak with the sites that hold more or less at it.
#pragma once

#include <string>
#include <vector>

#include "peak_diff.h"
#include "report_model.h"

namespace cuaudit::report {

// `after` with the baseline applied (each finding's BaselineStatus, `after.baseline->fixed`);
// `before_name` and `after_name` are what the user gave for the two reports.
std::string render_diff_json(const Report& before, const Report& after, const std::vector<DevicePeakChange>& peaks,
                             const std::string& before_name, const std::string& after_name);

}  // namespace cuaudit::report
