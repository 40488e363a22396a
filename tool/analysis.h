// From a run directory to the report model: read every trace, replay it, judge, symbolize.
#pragma once

#include <optional>
#include <stdexcept>
#include <string>

#include "analysis_options.h"
#include "report_model.h"

namespace cuaudit {

// "DIR is not a directory; give `cuaudit report` the directory that `cuaudit --save DIR` wrote":
// said by the analysis and by the command line, which checks first (a bad command line, exit 2).
std::string not_a_run_dir_message(const std::string& dir);

// The report of a run directory (report.nothing_tracked: no process could be observed). Throws
// std::runtime_error when the directory cannot be analyzed at all (not a run directory, a foreign
// or unreadable trace); damage that leaves part of a trace readable is a note in the report.
// What analyze_run_dir throws for a directory that is no cuaudit run at all (empty, or holding
// neither a trace nor run.json): the user named the wrong directory, not a failure of cuaudit's.
struct NotARunDirectory : std::runtime_error {
  using std::runtime_error::runtime_error;
};

report::Report analyze_run_dir(const std::string& dir, const AnalysisOptions& options);

}  // namespace cuaudit
