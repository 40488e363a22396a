// Finds the run directory of a program running under cuaudit from a pid, for `cuaudit snapshot
// PID`: the program's environment names the directory its traces go to (CUAUDIT_TRACE_DIR, set by
// the launcher); given the pid of the cuaudit that runs it, its child processes are looked at.
#pragma once

#include <cstdint>
#include <string>

namespace cuaudit {

// The trace directory of `pid` or of its nearest descendant running under cuaudit. Throws
// std::runtime_error saying what to do when there is none.
std::string run_dir_of_process(uint64_t pid);

}  // namespace cuaudit
