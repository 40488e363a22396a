// What cuaudit does with the signals that stop a job (a CI timeout or cancel, a closed terminal, a
// `kill`) while the program it started runs, and afterwards while it writes the report.
//
// While the program runs: a SIGTERM, SIGHUP, SIGINT or SIGQUIT sent to cuaudit is passed on to the
// program (by the launcher's wait, which first asks the Python hooks to write PyTorch's and JAX's
// files), and cuaudit waits for it and reports (the trace is written crash-safe). Signals a
// terminal sends (Ctrl-C, Ctrl-\) reach the program's process group by themselves and are not sent
// again. A repeat of the same stop within a second (timeout(1) signals cuaudit and then its whole
// group) counts once. A later one means "stop waiting": cuaudit kills the program (SIGKILL) and
// reports what its trace holds, saying so. Once the program has ended, a signal ends cuaudit as it
// would any program, saying where the recorded run was left.
//
// SIGUSR1, SIGUSR2, SIGALRM, SIGXCPU, SIGVTALRM and SIGPROF (what Slurm and Grid Engine send
// before a job's time ends, and timers) are notices, not stops: each sent to cuaudit while the
// program runs is passed on to it, and none ends cuaudit, before or after the program's end.
//
// A signal that was ignored when cuaudit started (nohup's SIGHUP) stays ignored, for cuaudit and
// for the program.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>

namespace cuaudit {

class SignalForwarding {
 public:
  // Installs the handlers; `run_dir` is named if a signal ends cuaudit after the program.
  explicit SignalForwarding(const std::string& run_dir);
  // Restores what the signals did before.
  ~SignalForwarding();
  SignalForwarding(const SignalForwarding&) = delete;
  SignalForwarding& operator=(const SignalForwarding&) = delete;

  // In the child, before exec: the program gets the dispositions cuaudit was started with.
  void restore_in_child() const;
  // In cuaudit, once the program is forked: signals are passed on to it from now on.
  void forward_to(pid_t program);
  // A stop received and not passed on yet; taking it clears it.
  std::optional<int> take_pending();
  // Sends the stop to the program, unless cuaudit killed it already.
  void pass_on(int sig);
  // Once the program has been waited for: a further signal ends cuaudit.
  void program_ended();

  // The first signal passed on to the program, if any.
  std::optional<int> forwarded() const;
  // The signal after which cuaudit killed the program, if it did.
  std::optional<int> killed_after() const;
};

// A report whose terminal went away (stderr a closed pipe: `cuaudit ... 2>&1 | head`) still
// writes its files: cuaudit ignores SIGPIPE (a failed write to stderr is harmless) and SIGXFSZ (a
// report past `ulimit -f` fails with a message and 125, not with 153), and the program it starts
// gets their dispositions back.
void keep_writing_on_broken_pipe();
void restore_broken_pipes();

}  // namespace cuaudit
