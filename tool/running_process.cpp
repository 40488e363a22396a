#include "running_process.h"

#include <dirent.h>

#include <deque>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <vector>

#include <fmt/format.h>

#include "environment.h"
#include "safe_file.h"

namespace cuaudit {
namespace {

// The value of CUAUDIT_TRACE_DIR in the process's environment; empty when it has none (or its
// environment cannot be read: another user's process).
std::string trace_dir_in_environment(uint64_t pid) {
  std::string environ, error;
  if (!read_regular_file(fmt::format("/proc/{}/environ", pid), size_t{1} << 24, environ, error)) return {};
  const std::string prefix = std::string(env_name(EnvVar::TraceDir)) + "=";
  std::istringstream in(environ);
  for (std::string entry; std::getline(in, entry, '\0');) {
    if (entry.compare(0, prefix.size(), prefix) == 0) return entry.substr(prefix.size());
  }
  return {};
}

std::vector<uint64_t> children_of(uint64_t pid) {
  std::vector<uint64_t> out;
  const std::string tasks = fmt::format("/proc/{}/task", pid);
  DIR* d = opendir(tasks.c_str());
  if (!d) return out;
  while (dirent* task = readdir(d)) {
    if (task->d_name[0] == '.') continue;
    std::ifstream children(tasks + "/" + task->d_name + "/children");
    for (uint64_t child; children >> child;) out.push_back(child);
  }
  closedir(d);
  return out;
}

}  // namespace

std::string run_dir_of_process(uint64_t pid) {
  if (!std::ifstream(fmt::format("/proc/{}/environ", pid))) {
    throw std::runtime_error(fmt::format("no process {} is running (or its environment cannot be read)", pid));
  }
  // The process itself, then its descendants, nearest first.
  std::deque<uint64_t> todo{pid};
  for (size_t seen = 0; !todo.empty() && seen < 4096; ++seen) {
    const uint64_t p = todo.front();
    todo.pop_front();
    std::string dir = trace_dir_in_environment(p);
    if (!dir.empty()) return dir;
    for (uint64_t child : children_of(p)) todo.push_back(child);
  }
  throw std::runtime_error(
      fmt::format("process {} is not running under cuaudit (neither it nor its children have {} in their "
                  "environment); give the pid of a program started with `cuaudit`, or its --save directory",
                  pid, env_name(EnvVar::TraceDir)));
}

}  // namespace cuaudit
