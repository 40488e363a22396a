#include "run_ending.h"

#include <unistd.h>

#include <algorithm>
#include <iostream>

#include <fmt/format.h>

namespace cuaudit {
namespace {

// Whether a process the program left running has a trace in the run: it may still write there.
bool still_recording(const std::string& run_dir, const RunInfo& run) {
  return std::any_of(run.still_running.begin(), run.still_running.end(), [&](uint64_t pid) {
    const std::string trace = fmt::format("{}/{}{}{}", run_dir, run_dir::Trace.prefix, pid, run_dir::Trace.suffix);
    return access(trace.c_str(), F_OK) == 0;
  });
}

}  // namespace

AnalysisOptions save_run_info(const std::string& run_dir, RunInfo& run, const AnalysisOptions& analysis) {
  run.cuaudit_version = CUAUDIT_VERSION;
  AnalysisOptions final_analysis = analysis;
  std::string error;
  if (!write_run_info(run_dir, run, error)) {
    std::cerr << "cuaudit: warning: " << error << '\n';
    final_analysis.unsaved_run = run;
    final_analysis.unsaved_run_error = error;
  }
  return final_analysis;
}

void keep_or_remove_run_dir(const std::string& run_dir, bool temporary, const RunInfo& run) {
  if (temporary && still_recording(run_dir, run)) {
    std::cerr << "cuaudit: the program left process(es) running that record; the run is kept in " << run_dir
              << " for them (once they end: cuaudit report " << run_dir << ")\n";
  } else if (temporary) {
    remove_run_dir(run_dir);
  } else {
    std::cerr << "cuaudit: the recorded run is in " << run_dir << " (analyze it again with: cuaudit report " << run_dir
              << ")\n";
  }
}

}  // namespace cuaudit
