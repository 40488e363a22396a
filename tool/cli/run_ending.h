// What `cuaudit run` does with its run once the program has ended: run.json written (or, when it
// cannot be, the launcher's account kept for the analysis), and the run directory kept or removed.
#pragma once

#include <string>

#include "analysis_options.h"
#include "run_dir.h"

namespace cuaudit {

// Writes run.json (stamping this cuaudit's version). When it cannot be written (a full disk), the
// options returned give the analysis the launcher's account instead, and it says so.
AnalysisOptions save_run_info(const std::string& run_dir, RunInfo& run, const AnalysisOptions& analysis);

// After the report: a temporary run is removed, unless a process the program left running still
// records into it (then kept, and said); a saved one is named for `cuaudit report`.
void keep_or_remove_run_dir(const std::string& run_dir, bool temporary, const RunInfo& run);

}  // namespace cuaudit
