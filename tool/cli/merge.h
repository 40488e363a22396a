// `cuaudit merge`: one report from the per-rank reports of an MPI or Slurm job. Findings that are
// the same bug (same fingerprint: kind, API, result and user frames) are merged, with the ranks
// they came from. The result is a report like any other: every output format renders it.
#pragma once

#include <string>
#include <vector>

#include "report_model.h"

namespace cuaudit {

// A JSON report, or the report.json of a directory written by --output. Throws
// std::runtime_error saying what is wrong and what to give instead.
report::Report read_report_file(const std::string& input);

// `reports[i]` came from `names[i]`; its position is its rank.
report::Report merge_reports(const std::vector<report::Report>& reports, const std::vector<std::string>& names);

}  // namespace cuaudit
