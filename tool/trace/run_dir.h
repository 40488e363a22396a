// A run directory: what one `cuaudit run` recorded, readable later by `cuaudit report DIR`. What
// it holds is declared once, in common/run_dir_layout.inc.
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "run_dir_layout.h"

namespace cuaudit {

struct RunInfo {
  std::vector<std::string> command;
  uint64_t pid = 0;
  std::optional<int> exit_code;
  std::optional<int> signal;
  // A stop cuaudit received and passed on to the program (SIGTERM from a CI timeout, ...), and the
  // one after which it killed the program that did not end.
  std::optional<int> forwarded_signal;
  std::optional<int> killed_after_signal;
  // Processes the program started that were still running when it ended (a background worker, a
  // daemon): cuaudit did not wait for them, so their traces are read as of then, not as cut short.
  std::vector<uint64_t> still_running;
  // Each trace's size in bytes when the run ended (those still running left out): a trace found
  // shorter later was cut after the run (an upload, a copy), which its records alone may not show.
  std::map<uint64_t, uint64_t> trace_bytes;
  std::string cuaudit_version;
  // What the injection was told to record (none: a run.json written before they were kept): which
  // checks had anything to judge.
  std::optional<bool> launch_params_recorded, resources_recorded;
};

inline constexpr const char* kRunInfoFile = run_dir::RunInfo.prefix;
inline constexpr const char* kSymbolCacheFile = run_dir::SymbolCache.prefix;
inline constexpr const char* kCallSiteCacheFile = run_dir::CallSiteCache.prefix;
inline constexpr const char* kKernelAccessCacheFile = run_dir::KernelAccessCache.prefix;
inline constexpr const char* kKernelCodeDir = run_dir::KernelCode.prefix;

// Where the injection kept a module's code in run `dir`: kernel-code/<16 hex digits of its hash>.cubin,
// or .fatbin for a fat binary.
std::string kept_module_code(const std::string& dir, uint64_t hash, bool fatbin);

bool write_run_info(const std::string& dir, const RunInfo& info, std::string& error);

// Whether process `pid` was still running when the launched program ended (RunInfo::still_running).
inline bool left_running(const RunInfo& run, uint64_t pid) {
  return std::find(run.still_running.begin(), run.still_running.end(), pid) != run.still_running.end();
}
inline bool left_running(const std::optional<RunInfo>& run, uint64_t pid) { return run && left_running(*run, pid); }
// Returns nullopt when the file is absent; throws std::runtime_error when it is unreadable.
std::optional<RunInfo> read_run_info(const std::string& dir);
std::vector<std::string> list_traces(const std::string& dir);
// The pid in a file name of per-process `entry` (its prefix, a pid, its suffix), if it is one.
std::optional<uint64_t> pid_in_entry_name(const std::string& name, const run_dir::Entry& entry);
// The processes that have a file of per-process `entry` in `dir` (its prefix, a pid, its suffix).
std::vector<uint64_t> processes_with(const std::string& dir, const run_dir::Entry& entry);

// A temporary run directory, removed whole (whatever the injection, the hooks and the tool wrote
// in it); links are removed, never followed. False when something could not be removed.
bool remove_run_dir(const std::string& dir);

// "SIGSEGV" for 11, "signal 77" for what has no name.
std::string signal_name(int signal);

}  // namespace cuaudit
