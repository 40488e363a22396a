// --mode, --stack-sample-bytes and --stack-exact-bytes: watch mode's options (docs/LONG_RUNNING.md),
// declared with the run command's and checked once the command line is parsed.
#pragma once

#include <CLI/CLI.hpp>

#include <optional>

#include "launcher.h"
#include "options.h"

namespace cuaudit {

// Watch mode's --sample-interval when none is given (check mode's is 10 ms).
inline constexpr unsigned kWatchSampleIntervalMs = 1000;
// Watch mode's PyTorch history (CUAUDIT_TORCH_HISTORY_ENTRIES, 100,000 otherwise): the Python hooks
// write it whole every minute, which took 0.745 s at 100,000 events on the H200 and 0.034 s at
// 10,000 (docs/PYTHON.md), the program's threads waiting for the GIL meanwhile. A service's live
// tensors are listed in full at each write whatever the history holds.
inline constexpr uint64_t kWatchTorchHistoryEntries = 10000;

void add_watch_options(CLI::App& app, RunOptions& run);

// Watch mode does no launch checks, and the sampling sizes belong to it: a contradiction is refused
// (an exit status, after saying why) rather than one of its halves silently dropped. Turns the
// launch checks off in watch mode, and takes watch mode's sample interval unless one was given.
std::optional<int> check_watch_options(const CLI::App& app, RunOptions& run);

// Watch mode's compaction of the traces while the program runs (--trace-compact-bytes): how often
// their sizes are looked at, and the task that does it.
inline constexpr unsigned kCompactionCheckMs = 2000;
void add_compaction_task(const RunOptions& run, const std::string& run_dir, LaunchRequest& request);

}  // namespace cuaudit
