#include "framework_request.h"

#include <signal.h>

#include <cerrno>
#include <cstdint>
#include <thread>

#include <fmt/format.h>

#include "python_hooks.h"
#include "run_dir.h"
#include "safe_file.h"

namespace cuaudit {
namespace {

constexpr auto kPoll = std::chrono::milliseconds(20);

bool running(uint64_t pid) { return kill(static_cast<pid_t>(pid), 0) == 0 || errno == EPERM; }

// The processes of the run directory whose hooks write framework files and that still run.
std::vector<uint64_t> writing_processes(const std::string& run_dir) {
  std::vector<uint64_t> out;
  for (uint64_t pid : processes_with(run_dir, run_dir::PythonHooks))
    if (running(pid) && python_hooks_answer(run_dir, pid).writes) out.push_back(pid);
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
    return {
        fmt::format("could not ask the Python hooks for their framework files ({}): PyTorch's and JAX's "
                    "blocks are as they last wrote them",
                    error)};
  }
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (!waiting.empty() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(kPoll);
    std::vector<uint64_t> still;
    for (uint64_t pid : waiting)
      if (running(pid) && python_hooks_answer(run_dir, pid).answered != request) still.push_back(pid);
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
