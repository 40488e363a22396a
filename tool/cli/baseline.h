// Baselines: adopt the gate on a project that already has findings. Only findings that are not in
// the baseline report fail the gate; the report lists new, still-present and fixed findings.
#pragma once

#include <string>

#include "report_model.h"

namespace cuaudit {

// Marks each finding of `report` new or still present (matched by fingerprint, see
// reports/fingerprint.h), records the baseline's findings that are gone, and recomputes the
// summary, which then gates only on new findings.
void apply_baseline(const std::string& baseline_file, const report::Report& baseline, report::Report& report);

}  // namespace cuaudit
