#include "running_process.h"

#include <dirent.h>

#include <cstdlib>
#include <deque>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <unordered_map>
#include <vector>

#include <fmt/format.h>

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

// Every process's parent, from /proc/PID/stat (/proc/PID/task/TID/children needs a kernel option
// that not every kernel, nor every container runtime, has).
std::unordered_map<uint64_t, std::vector<uint64_t>> children_by_parent() {
  std::unordered_map<uint64_t, std::vector<uint64_t>> out;
  DIR* d = opendir("/proc");
  if (!d) return out;
  while (dirent* entry = readdir(d)) {
    char* end = nullptr;
    const uint64_t pid = std::strtoull(entry->d_name, &end, 10);
    if (!pid || *end) continue;
    std::ifstream stat(fmt::format("/proc/{}/stat", pid));
    std::string line;
    if (!std::getline(stat, line)) continue;
    // "pid (comm) state ppid ...": comm may hold spaces and parentheses; the last ')' ends it.
    const size_t close = line.rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream rest(line.substr(close + 1));
    std::string state;
    uint64_t parent = 0;
    if (rest >> state >> parent) out[parent].push_back(pid);
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
  std::string dir = trace_dir_in_environment(pid);
  if (!dir.empty()) return dir;
  const auto children = children_by_parent();
  std::deque<uint64_t> todo{pid};
  for (size_t seen = 0; !todo.empty() && seen < 4096; ++seen) {
    const uint64_t p = todo.front();
    todo.pop_front();
    if (p != pid && !(dir = trace_dir_in_environment(p)).empty()) return dir;
    if (auto it = children.find(p); it != children.end()) todo.insert(todo.end(), it->second.begin(), it->second.end());
  }
  throw std::runtime_error(
      fmt::format("process {} is not running under cuaudit (neither it nor its children have {} in their "
                  "environment); give the pid of a program started with `cuaudit`, or its --save directory",
                  pid, env_name(EnvVar::TraceDir)));
}

}  // namespace cuaudit
