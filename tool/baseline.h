// Baselines: adopt the gate on a project that already has findings. Only findings that are not in
// the baseline report fail the gate; the report lists new, still-present and fixed findings.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "report_model.h"

namespace cuaudit {

struct BaselineComparison {
  std::vector<std::string> status;    // per finding of the new report: "new" or "still_present"
  std::vector<nlohmann::json> fixed;  // findings of the baseline that are gone
};

// Findings are matched by fingerprint (see fingerprint.h).
BaselineComparison compare_with_baseline(const nlohmann::json& baseline, const nlohmann::json& report);

// Marks the report's findings and records what was fixed; the summary then gates only on new ones.
void apply_baseline(const std::string& baseline_file, const nlohmann::json& baseline, report::Report& report);

// `cuaudit diff OLD NEW` as text.
std::string render_baseline_diff(const nlohmann::json& report, const BaselineComparison& comparison);

}  // namespace cuaudit
