#include "crash_handler.h"

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>

#include "call_recorder.h"
#include "event_clock.h"
#include "trace_format.h"
#include "trace_writer.h"

namespace cuaudit::inject {
namespace {

// Crashes, abort() (and so uncaught C++ exceptions), and the signals that end a process by
// default when someone asks it to stop.
constexpr int kSignals[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGTERM, SIGINT, SIGQUIT, SIGHUP};
constexpr int kMaxSignal = 65;

struct sigaction g_previous[kMaxSignal];
std::atomic<bool> g_handling{false};

void pass_on(int sig, siginfo_t* info, void* context) {
  const struct sigaction& previous = g_previous[sig];
  if ((previous.sa_flags & SA_SIGINFO) && previous.sa_sigaction) {
    previous.sa_sigaction(sig, info, context);
  } else if (previous.sa_handler == SIG_IGN) {
    return;
  } else if (previous.sa_handler == SIG_DFL) {
    // Restore the default and raise again: the signal is blocked while this handler runs and is
    // delivered, with its default action, as soon as the handler returns (a faulting instruction
    // that is simply re-executed would do the same, but a signal sent by kill would not).
    struct sigaction default_action {};
    default_action.sa_handler = SIG_DFL;
    sigemptyset(&default_action.sa_mask);
    sigaction(sig, &default_action, nullptr);
    raise(sig);
  } else {
    previous.sa_handler(sig);
  }
}

void on_fatal_signal(int sig, siginfo_t* info, void* context) {
  const int saved_errno = errno;
  if (!g_handling.exchange(true)) {  // a fault inside this handler must not loop
    trace::SignalRecord r{};
    r.seq = next_sequence();
    r.time_ns = monotonic_ns();
    r.signal = sig;
    r.tid = current_tid();
    trace_writer().flush_without_waiting(r);
    g_handling.store(false);
  }
  pass_on(sig, info, context);
  errno = saved_errno;
}

}  // namespace

void install_crash_handlers() noexcept {
  for (int sig : kSignals) {
    struct sigaction previous {};
    if (sigaction(sig, nullptr, &previous) != 0) continue;
    // A signal the program ignores (nohup's SIGHUP) stays ignored.
    if (!(previous.sa_flags & SA_SIGINFO) && previous.sa_handler == SIG_IGN) continue;
    g_previous[sig] = previous;
    struct sigaction action {};
    action.sa_sigaction = on_fatal_signal;
    action.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&action.sa_mask);
    sigaction(sig, &action, nullptr);
  }
}

}  // namespace cuaudit::inject
