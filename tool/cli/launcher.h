// Starts the program with the injection library loaded and waits for it. The only part of
// cuaudit that forks and execs.
#pragma once

#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "run_dir.h"
#include "signal_forwarding.h"

namespace cuaudit {

// Something that stopped the program from being started; `exit_code` is what cuaudit returns.
class LaunchError : public std::runtime_error {
 public:
  LaunchError(int exit_code, const std::string& message) : std::runtime_error(message), exit_code(exit_code) {}
  int exit_code;
};

// The program's path as exec will run it: names without '/' are searched in PATH.
// Throws LaunchError(127) when absent, LaunchError(126) when not executable.
std::string resolve_program(const std::string& name);

// The injection library: `explicit_path` if given, else $CUAUDIT_INJECTION_PATH, else beside
// the cuaudit executable or in ../lib/cuaudit/. Throws LaunchError(125) when it cannot be found
// or cannot be loaded (a missing libcupti says so).
std::string find_injection_library(const std::string& explicit_path);

struct LaunchRequest {
  std::vector<std::string> argv;  // argv[0] as the user typed it
  std::string program_path;       // resolved
  std::string injection_path;
  std::string preload_path;              // libcuaudit-preload.so for LD_PRELOAD; empty: none
  std::string run_dir;                   // the trace directory the injection writes into
  bool record_call_sites = false;        // --check-api-results
  std::string target_processes = "all";  // --target-processes
  unsigned sample_interval_ms = 10;      // --sample-interval (0: no memory timeline)
  bool check_launch_params = true;       // --check-launch-params
  bool track_resources = false;          // --track-resources
  uint64_t stack_sample_bytes = 0;       // --mode watch: mean bytes between sampled stacks (0: every stack)
  uint64_t stack_exact_bytes = 0;        // --mode watch: allocations this big always have their stack
  uint64_t torch_history_entries = 0;    // PyTorch's history the Python hooks keep (0: their default), unless
                                         // CUAUDIT_TORCH_HISTORY_ENTRIES is set already
  std::string sanitizer_library;         // --device-heap: the Sanitizer API library; empty: CUPTI as usual
  std::string python_hooks_dir;          // put first on PYTHONPATH (its sitecustomize.py); empty: none
  // Work done every `interval_ms` while the program runs, with its pid (--snapshot-interval,
  // --metrics): one task at a time, on a thread of its own, so that a stop is passed on at once.
  struct Periodic {
    unsigned interval_ms = 0;
    std::function<void(uint64_t pid)> run;
  };
  std::vector<Periodic> while_running;
  // Passes a stop (SIGTERM, ...) sent to cuaudit on to the program; none: the signals do what they
  // did before.
  SignalForwarding* signals = nullptr;
  // Before a stop is passed on: the Python hooks write PyTorch's and JAX's files.
  std::function<void()> before_passing_on;
};

// --device-heap: compute-sanitizer's libsanitizer-public.so: $CUAUDIT_SANITIZER_LIBRARY, else in
// the toolkit's compute-sanitizer folder ($CUDA_HOME, /usr/local/cuda, beside compute-sanitizer on
// PATH). Throws LaunchError(125) saying where it looked when there is none.
std::string find_sanitizer_library();

// libcuaudit-preload.so beside the injection library, or empty when it is not there.
std::string find_preload_library(const std::string& injection_path);

// The Python hooks (python/cuaudit_site, with its sitecustomize.py) beside the injection library,
// or empty when they are not there.
std::string find_python_hooks(const std::string& injection_path);

// Runs the program to completion. A stop sent to cuaudit reaches the program (request.signals), so
// the report still comes out. Returns how it ended.
RunInfo run_program(const LaunchRequest& request);

}  // namespace cuaudit
