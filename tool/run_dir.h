// A run directory: what one `cuaudit run` recorded, readable later by `cuaudit report DIR`.
//   trace-<pid>.cutrace  one per tracked process (written by the injection)
//   run.json             the launcher's account: command and how the program ended
//   symbols.json         stack symbols resolved so far, so the run can be read anywhere
//   call_sites.json      what each failing call's site did with the result (from the machine code)
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace cuaudit {

struct RunInfo {
  std::vector<std::string> command;
  uint64_t pid = 0;
  std::optional<int> exit_code;
  std::optional<int> signal;
  std::string cuaudit_version;
};

inline constexpr const char* kRunInfoFile = "run.json";
inline constexpr const char* kSymbolCacheFile = "symbols.json";
inline constexpr const char* kCallSiteCacheFile = "call_sites.json";
inline constexpr const char* kKernelAccessCacheFile = "kernel-access.json";
inline constexpr const char* kKernelCodeDir = "kernel-code";  // the injection's kernel_code.h writes it

bool write_run_info(const std::string& dir, const RunInfo& info, std::string& error);
// Returns nullopt when the file is absent; throws std::runtime_error when it is unreadable.
std::optional<RunInfo> read_run_info(const std::string& dir);
std::vector<std::string> list_traces(const std::string& dir);

// "SIGSEGV" for 11, "signal 77" for what has no name.
std::string signal_name(int signal);

}  // namespace cuaudit
