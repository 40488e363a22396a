#include "framework_request.h"

#include <dirent.h>
#include <signal.h>

#include <cerrno>
#include <cstdint>
#include <map>
#include <thread>

#include <fmt/format.h>

#include "python_hooks.h"
#include "run_dir_layout.h"
#include "safe_file.h"

namespace cuaudit {
namespace {

constexpr size_t kMaxHooksFileBytes = 1 << 20;
constexpr auto kPoll = std::chrono::milliseconds(20);

std::string hooks_path(const std::string& run_dir, uint64_t pid) {
  return fmt::format("{}/{}{}{}", run_dir, run_dir::PythonHooks.prefix, pid, run_dir::PythonHooks.suffix);
}

HooksAnswer answer_of(const std::string& run_dir, uint64_t pid) {
  std::string text, error;
  if (!read_regular_file(hooks_path(run_dir, pid), kMaxHooksFileBytes, text, error)) return {};
  return python_hooks_answer(text);
}

bool running(uint64_t pid) { return kill(static_cast<pid_t>(pid), 0) == 0 || errno == EPERM; }

// The processes of the run directory whose hooks write framework files and that still run.
std::vector<uint64_t> writing_processes(const std::string& run_dir) {
  std::vector<uint64_t> out;
  DIR* dir = opendir(run_dir.c_str());
  if (!dir) return out;
  const std::string prefix = run_dir::PythonHooks.prefix, suffix = run_dir::PythonHooks.suffix;
  while (const dirent* e = readdir(dir)) {
    const std::string name = e->d_name;
    if (name.size() <= prefix.size() + suffix.size() || name.compare(0, prefix.size(), prefix) != 0 ||
        name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0)
      continue;
    const std::string digits = name.substr(prefix.size(), name.size() - prefix.size() - suffix.size());
    if (digits.empty() || digits.size() > 10 || digits.find_first_not_of("0123456789") != std::string::npos) continue;
    const uint64_t pid = std::stoull(digits);
    if (running(pid) && answer_of(run_dir, pid).writes) out.push_back(pid);
  }
  closedir(dir);
  return out;
}

}  // namespace

std::vector<std::string> ask_framework_files(const std::string& run_dir, std::chrono::milliseconds limit) {
  std::vector<uint64_t> waiting = writing_processes(run_dir);
  if (waiting.empty()) return {};
  // A number no earlier request had: the hooks answer a request that differs from the last one.
  const std::string request = fmt::format(
      "{}", std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
                .count());
  std::string error;
  if (!replace_file(fmt::format("{}/{}", run_dir, run_dir::FrameworkRequest.prefix), request + "\n", error)) {
    return {fmt::format("could not ask the Python hooks for their framework files ({}): PyTorch's and JAX's "
                        "blocks are as they last wrote them",
                        error)};
  }
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (!waiting.empty() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(kPoll);
    std::vector<uint64_t> still;
    for (uint64_t pid : waiting)
      if (running(pid) && answer_of(run_dir, pid).answered != request) still.push_back(pid);
    waiting.swap(still);
  }
  std::vector<std::string> warnings;
  for (uint64_t pid : waiting) {
    warnings.push_back(fmt::format(
        "the Python hooks of process {} did not write PyTorch's or JAX's blocks within {:.1f} s of being asked: "
        "the snapshot shows them as last written (see the report's notes for when)",
        pid, static_cast<double>(limit.count()) / 1000.0));
  }
  return warnings;
}

}  // namespace cuaudit
