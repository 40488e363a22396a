#include "running_process.h"

#include <cstdlib>
#include <fstream>
#include <stdexcept>
#include <vector>

#include <fmt/format.h>

#include "descendants.h"
#include "environment.h"

namespace cuaudit {
namespace {

// The value of CUAUDIT_TRACE_DIR in the process's environment; empty when it has none (or its
// environment cannot be read: another user's process).
std::string trace_dir_in_environment(uint64_t pid) {
  // Read to its end: /proc files say they are empty.
  std::ifstream in(fmt::format("/proc/{}/environ", pid), std::ios::binary);
  const std::string prefix = std::string(env_name(EnvVar::TraceDir)) + "=";
  for (std::string entry; std::getline(in, entry, '\0');) {
    if (entry.compare(0, prefix.size(), prefix) == 0) return entry.substr(prefix.size());
  }
  return {};
}

}  // namespace

std::string run_dir_of_process(uint64_t pid) {
  if (!std::ifstream(fmt::format("/proc/{}/environ", pid))) {
    if (std::ifstream(fmt::format("/proc/{}/stat", pid)))
      throw std::runtime_error(fmt::format(
          "process {} is running, but its environment cannot be read (another user's process?): name its run "
          "directory instead",
          pid));
    throw std::runtime_error(fmt::format("no process {} is running", pid));
  }
  // The process itself, then its descendants, nearest first.
  std::string dir = trace_dir_in_environment(pid);
  if (!dir.empty()) return dir;
  for (const pid_t p : live_descendants(static_cast<pid_t>(pid))) {
    if (!(dir = trace_dir_in_environment(static_cast<uint64_t>(p))).empty()) return dir;
  }
  throw std::runtime_error(
      fmt::format("process {} is not running under cuaudit (neither it nor its children have {} in their "
                  "environment); give the pid of a program started with `cuaudit`, or its --save directory",
                  pid, env_name(EnvVar::TraceDir)));
}

}  // namespace cuaudit
