#include "run_ending.h"
#include "text_helpers.h"

#include <sys/stat.h>
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

// Each trace's size now that the run ended, but for the processes still running (they write on).
void note_trace_sizes(const std::string& run_dir, RunInfo& run) {
  for (const std::string& path : list_traces(run_dir)) {
    const std::optional<uint64_t> pid = pid_in_entry_name(path.substr(path.rfind('/') + 1), run_dir::Trace);
    struct stat st;
    if (!pid || left_running(run, *pid) || lstat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue;
    run.trace_bytes[*pid] = static_cast<uint64_t>(st.st_size);
  }
}

}  // namespace

AnalysisOptions save_run_info(const std::string& run_dir, RunInfo& run, const AnalysisOptions& analysis) {
  run.cuaudit_version = CUAUDIT_VERSION;
  note_trace_sizes(run_dir, run);
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
    std::cerr << "cuaudit: the program left process(es) running that record; the run is kept in "
              << report::shell_word(run_dir) << " for them (once they end: cuaudit report "
              << report::shell_word(run_dir) << ")\n";
  } else if (temporary) {
    remove_run_dir(run_dir);
  } else {
    std::cerr << "cuaudit: the recorded run is in " << report::shell_word(run_dir)
              << " (analyze it again with: cuaudit report " << report::shell_word(run_dir) << ")\n";
  }
}

}  // namespace cuaudit
