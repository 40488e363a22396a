// From a run directory to the report model: read every trace, replay it, judge, symbolize.
#pragma once

#include <optional>
#include <string>

#include "analysis_options.h"
#include "report_model.h"

namespace cuaudit {

// The report of a run directory (report.nothing_tracked: no process could be observed). Throws
// std::runtime_error when the directory cannot be analyzed at all (not a run directory, a foreign
// or unreadable trace); damage that leaves part of a trace readable is a note in the report.
report::Report analyze_run_dir(const std::string& dir, const AnalysisOptions& options);

}  // namespace cuaudit
