// cuaudit's exit statuses (docs/EXIT_CODES.md). Outside these, cuaudit exits with the program's
// own status (128 + N when a signal N killed it, as a shell reports it).
#pragma once

#include <string>

namespace cuaudit {

inline constexpr int kExitUsage = 2;             // bad command line
inline constexpr int kExitNothingTracked = 122;  // CUDA never initialized, or cuaudit could not attach
inline constexpr int kExitIncomplete = 123;      // part of what was recorded could not be read: never a clean result
inline constexpr int kExitToolFailure = 125;     // cuaudit itself failed (unwritable output, unreadable trace, ...)
inline constexpr int kExitNotExecutable = 126;   // as a shell: the program exists but cannot be run
inline constexpr int kExitNotFound = 127;        // as a shell: no such program

// Says "cuaudit: error: MESSAGE" on stderr and exits with `code`: how every command gives up.
[[noreturn]] void fail(int code, const std::string& message);

// From now on, a failure also says where the recorded run was left (the run's report could not be
// written: its temporary directory is kept so that nothing recorded is lost); empty: nothing more.
void say_on_failure(const std::string& run_dir);

}  // namespace cuaudit
