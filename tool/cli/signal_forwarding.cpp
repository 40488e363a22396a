#include "signal_forwarding.h"
#include "text_helpers.h"

#include <signal.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdint>

#include <fmt/format.h>

namespace cuaudit {
namespace {

// What stops a job: a CI timeout or cancel (SIGTERM), a closed terminal or ssh session (SIGHUP),
// an interrupt or quit sent with kill.
constexpr int kStopSignals[] = {SIGTERM, SIGHUP, SIGINT, SIGQUIT};
// What schedulers send to warn a job (Slurm's --signal=USR1@60, Grid Engine's -notify: USR1 and
// USR2) and what timers and limits send: not stops. Each is passed on to the program as it comes,
// and none ends cuaudit (by default each would, losing the report and orphaning the program).
constexpr int kNoticeSignals[] = {SIGUSR1, SIGUSR2, SIGALRM, SIGXCPU, SIGVTALRM, SIGPROF};
constexpr size_t kStops = sizeof kStopSignals / sizeof kStopSignals[0];
constexpr size_t kCount = kStops + sizeof kNoticeSignals / sizeof kNoticeSignals[0];

int handled_signal(size_t i) { return i < kStops ? kStopSignals[i] : kNoticeSignals[i - kStops]; }
// timeout(1) signals its child and then its own process group, cuaudit included: one stop, twice.
constexpr int64_t kRepeatWindowNs = 1'000'000'000;

// The handler's state: written before the handlers run or from them, read by the launcher.
struct sigaction g_before[kCount];
bool g_installed[kCount];
volatile sig_atomic_t g_program = 0;
volatile sig_atomic_t g_ended = 0;
volatile sig_atomic_t g_forwarded = 0;
volatile sig_atomic_t g_pending = 0;  // received, not passed on yet (the launcher does, after asking the hooks)
volatile sig_atomic_t g_killed_after = 0;
std::atomic<int64_t> g_first_ns{0};
char g_ended_message[4096];
size_t g_ended_message_size = 0;

int64_t now_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

bool repeats_first_stop() {
  const int64_t first = g_first_ns.load();
  return first != 0 && now_ns() - first < kRepeatWindowNs;
}

// Async-signal-safe only: kill, write, signal, raise, clock_gettime.
void on_stop_signal(int sig, siginfo_t* info, void*) {
  const int saved_errno = errno;
  // A terminal's Ctrl-C, Ctrl-\ or hang-up reaches the whole foreground process group: the
  // program has it already.
  const bool from_terminal = info && info->si_code == SI_KERNEL;
  if (g_ended) {
    if (!repeats_first_stop()) {
      ssize_t ignored = write(STDERR_FILENO, g_ended_message, g_ended_message_size);
      (void)ignored;
      signal(sig, SIG_DFL);
      raise(sig);
    }
  } else if (from_terminal) {
  } else if (g_first_ns.load() == 0) {
    g_first_ns.store(now_ns());
    g_forwarded = sig;
    g_pending = sig;
  } else if (!repeats_first_stop() && g_program > 0 && !g_killed_after) {
    g_killed_after = sig;  // asked again: stop waiting for a program that does not end
    kill(static_cast<pid_t>(g_program), SIGKILL);
  }
  errno = saved_errno;
}

// A notice is the program's to act on: passed on each time. One the kernel raised (cuaudit's own
// timer or CPU limit) is about cuaudit, not the program, and so is one after the program ended.
void on_notice_signal(int sig, siginfo_t* info, void*) {
  const int saved_errno = errno;
  const bool own = info && info->si_code == SI_KERNEL;
  if (!own && !g_ended && g_program > 0 && !g_killed_after) kill(static_cast<pid_t>(g_program), sig);
  errno = saved_errno;
}

sigset_t handled_signal_set() {
  sigset_t set;
  sigemptyset(&set);
  for (size_t i = 0; i < kCount; ++i) sigaddset(&set, handled_signal(i));
  return set;
}

}  // namespace

SignalForwarding::SignalForwarding(const std::string& run_dir) {
  const std::string message = fmt::format(
      "\ncuaudit: stopped by a signal while writing its report; the recorded run is in {} "
      "(analyze it with: cuaudit report {})\n",
      report::shell_word(run_dir), report::shell_word(run_dir));
  g_ended_message_size = std::min(message.size(), sizeof g_ended_message);
  memcpy(g_ended_message, message.data(), g_ended_message_size);
  g_program = 0;
  g_ended = 0;
  g_forwarded = 0;
  g_killed_after = 0;
  g_first_ns.store(0);
  // Until the program's pid is known, a stop waits (blocked) rather than being lost.
  const sigset_t set = handled_signal_set();
  sigprocmask(SIG_BLOCK, &set, nullptr);
  struct sigaction forward {};
  forward.sa_sigaction = on_stop_signal;
  forward.sa_flags = SA_SIGINFO;  // no SA_RESTART: the launcher's wait wakes up to pass the stop on
  sigfillset(&forward.sa_mask);
  struct sigaction notice = forward;
  notice.sa_sigaction = on_notice_signal;
  notice.sa_flags = SA_SIGINFO | SA_RESTART;  // nothing for the launcher to do
  for (size_t i = 0; i < kCount; ++i) {
    sigaction(handled_signal(i), nullptr, &g_before[i]);
    g_installed[i] = g_before[i].sa_handler != SIG_IGN;  // nohup's SIGHUP stays ignored
    if (g_installed[i]) sigaction(handled_signal(i), i < kStops ? &forward : &notice, nullptr);
  }
}

SignalForwarding::~SignalForwarding() {
  for (size_t i = 0; i < kCount; ++i) {
    if (g_installed[i]) sigaction(handled_signal(i), &g_before[i], nullptr);
    g_installed[i] = false;
  }
  const sigset_t set = handled_signal_set();
  sigprocmask(SIG_UNBLOCK, &set, nullptr);
}

void SignalForwarding::restore_in_child() const {
  for (size_t i = 0; i < kCount; ++i) {
    if (g_installed[i]) sigaction(handled_signal(i), &g_before[i], nullptr);
  }
  restore_broken_pipes();
  const sigset_t set = handled_signal_set();
  sigprocmask(SIG_UNBLOCK, &set, nullptr);
}

void SignalForwarding::forward_to(pid_t program) {
  g_program = program;
  const sigset_t set = handled_signal_set();
  sigprocmask(SIG_UNBLOCK, &set, nullptr);  // a stop that came during the fork is handled now
}

std::optional<int> SignalForwarding::take_pending() {
  const int sig = g_pending;
  if (!sig) return std::nullopt;
  g_pending = 0;
  return sig;
}

void SignalForwarding::pass_on(int sig) {
  if (g_program > 0 && !g_killed_after) kill(static_cast<pid_t>(g_program), sig);
}

void SignalForwarding::program_ended() {
  g_program = 0;
  g_pending = 0;
  g_ended = 1;
}

std::optional<int> SignalForwarding::forwarded() const {
  return g_forwarded ? std::optional<int>(g_forwarded) : std::nullopt;
}

std::optional<int> SignalForwarding::killed_after() const {
  return g_killed_after ? std::optional<int>(g_killed_after) : std::nullopt;
}

namespace {
// A write to a closed pipe, and one past `ulimit -f` (SIGXFSZ, whose default kills with 153 =
// 128 + 25, the code for "the program died of SIGXFSZ"): ignored, each write then fails (EPIPE,
// EFBIG) and cuaudit says so.
constexpr int kWriteSignals[] = {SIGPIPE, SIGXFSZ};
struct sigaction g_write_before[2];
bool g_write_saved[2] = {false, false};
}  // namespace

void keep_writing_on_broken_pipe() {
  struct sigaction ignore {};
  ignore.sa_handler = SIG_IGN;
  for (size_t i = 0; i < 2; ++i) g_write_saved[i] = sigaction(kWriteSignals[i], &ignore, &g_write_before[i]) == 0;
}

void restore_broken_pipes() {
  for (size_t i = 0; i < 2; ++i)
    if (g_write_saved[i]) sigaction(kWriteSignals[i], &g_write_before[i], nullptr);
}

}  // namespace cuaudit
