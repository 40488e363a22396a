#include "watch_options.h"

#include <iostream>

#include "documentation.h"
#include "exit_codes.h"
#include "option_words.h"
#include "trace_compaction.h"

namespace cuaudit {
namespace {

std::function<void(const std::string&)> byte_size(const char* name, uint64_t& target, bool zero_ok) {
  return [name, &target, zero_ok](const std::string& text) {
    const auto bytes = parse_byte_size(text);
    if (!bytes || (!zero_ok && *bytes == 0))
      throw CLI::ValidationError(name, "expected a size such as 512K, 1M or 4096 (bytes)");
    target = *bytes;
  };
}

}  // namespace

void add_watch_options(CLI::App& app, RunOptions& run) {
  app.add_option_function<std::string>(
         "--mode", [&run](const std::string& word) { run.watch = word == "watch"; },
         with_documentation_paths(
             "check: every event's stack and the launch checks, for tests and CI; watch: cheap enough to leave on "
             "a service for days (stacks of a sample of allocations, by bytes, every allocation and release still "
             "counted; no launch checks; docs/LONG_RUNNING.md)"))
      ->check(CLI::IsMember({"check", "watch"}))
      ->default_str("check");
  app.add_option_function<std::string>(
         "--stack-sample-bytes", byte_size("--stack-sample-bytes", run.stack_sample_bytes, false),
         "with --mode watch: walk one allocation's stack per SIZE allocated on average, as heap profilers sample "
         "(default 512K); sites' figures are estimates weighted by each sample's chance")
      ->type_name("SIZE");
  app.add_option_function<std::string>(
         "--stack-exact-bytes", byte_size("--stack-exact-bytes", run.stack_exact_bytes, true),
         "with --mode watch: allocations of SIZE or more always have their stack (default 1M; 0: none always)")
      ->type_name("SIZE");
  app.add_option_function<std::string>(
         "--trace-compact-bytes", byte_size("--trace-compact-bytes", run.trace_compact_bytes, true),
         "with --mode watch: compact a process's trace while it runs each time it grew by SIZE (default 256M; 0: "
         "never), so that the run's disk use follows what is live, not how long it ran")
      ->type_name("SIZE");
}

std::optional<int> check_watch_options(const CLI::App& app, RunOptions& run) {
  if (!run.watch && (app.count("--stack-sample-bytes") || app.count("--stack-exact-bytes"))) {
    std::cerr << "cuaudit: --stack-sample-bytes and --stack-exact-bytes need --mode watch (the default mode walks "
                 "every event's stack)\n";
    return kExitUsage;
  }
  if (!run.watch && app.count("--trace-compact-bytes")) {
    std::cerr << "cuaudit: --trace-compact-bytes needs --mode watch (the default mode keeps every event, which its "
                 "double-free and churn checks judge)\n";
    return kExitUsage;
  }
  if (run.watch && app.count("--check-launch-params") && run.check_launch_params) {
    std::cerr << "cuaudit: --mode watch does no launch checks; drop --check-launch-params yes, or run with --mode "
                 "check\n";
    return kExitUsage;
  }
  if (run.watch) run.check_launch_params = false;
  // The timeline's samples are most of a quiet service's trace (56 bytes per device every 10 ms:
  // 480 MB a day); one a second keeps the levels, the out-of-memory moments (sampled at the failed
  // call whatever the interval) and the pools' fragmentation, at 4.8 MB a day.
  if (run.watch && !app.count("--sample-interval")) run.sample_interval_ms = kWatchSampleIntervalMs;
  return std::nullopt;
}

void add_compaction_task(const RunOptions& run, const std::string& run_dir, LaunchRequest& request) {
  if (!run.watch || !run.trace_compact_bytes) return;
  request.while_running.push_back({kCompactionCheckMs, [run_dir, threshold = run.trace_compact_bytes](uint64_t) {
                                     compact_grown_traces(run_dir, threshold);
                                   }});
}

}  // namespace cuaudit
