// Asks cuaudit's Python hooks in the processes still running to write PyTorch's and JAX's files now
// (python/cuaudit_site/cuaudit_hooks.py, FileWrites), so that a snapshot (`cuaudit snapshot`,
// --snapshot-interval) shows the tensors and arrays alive now, by Python line, not those of the
// hooks' last periodic write.
//
// The request is a new number in the run directory's framework-request file; a process's hooks
// answer by writing their files, then that number into their python-hooks-<pid>.json.
#pragma once

#include <chrono>
#include <string>
#include <vector>

namespace cuaudit {

// The request, and the wait for every process that writes framework files and still runs, at most
// `limit`. Returns a warning for each process that did not answer in time (its files are then as
// last written) or for a request that could not be made; nothing when no process writes such files.
std::vector<std::string> ask_framework_files(const std::string& run_dir, std::chrono::milliseconds limit);

}  // namespace cuaudit
