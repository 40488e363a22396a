#include "crash_handler.h"

#include <pthread.h>
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
  if ((previous.sa_flags & SA_SIGINFO) ? !previous.sa_sigaction : previous.sa_handler == SIG_DFL) {
    // Restore the default and raise again: the signal is blocked while this handler runs and is
    // delivered, with its default action, as soon as the handler returns (a faulting instruction
    // that is simply re-executed would do the same, but a signal sent by kill would not).
    struct sigaction default_action {};
    default_action.sa_handler = SIG_DFL;
    sigemptyset(&default_action.sa_mask);
    sigaction(sig, &default_action, nullptr);
    raise(sig);
    return;
  }
  if (!(previous.sa_flags & SA_SIGINFO) && previous.sa_handler == SIG_IGN) return;
  // The program's handler runs as its own flags and mask say: its mask added to the blocked set,
  // the signal itself unblocked under SA_NODEFER, the default back under SA_RESETHAND.
  sigset_t mask = previous.sa_mask, saved;
  if (!(previous.sa_flags & SA_NODEFER)) sigaddset(&mask, sig);
  pthread_sigmask(SIG_BLOCK, &mask, &saved);
  if (previous.sa_flags & SA_NODEFER) {
    sigset_t self;
    sigemptyset(&self);
    sigaddset(&self, sig);
    pthread_sigmask(SIG_UNBLOCK, &self, nullptr);
  }
  if (previous.sa_flags & SA_RESETHAND) {
    struct sigaction default_action {};
    default_action.sa_handler = SIG_DFL;
    sigemptyset(&default_action.sa_mask);
    sigaction(sig, &default_action, nullptr);
  }
  if (previous.sa_flags & SA_SIGINFO) {
    previous.sa_sigaction(sig, info, context);
  } else {
    previous.sa_handler(sig);
  }
  pthread_sigmask(SIG_SETMASK, &saved, nullptr);
}

void on_fatal_signal(int sig, siginfo_t* info, void* context) {
  const int saved_errno = errno;
  const bool was_write_through = trace_writer().write_through_on();
  if (!g_handling.exchange(true)) {  // a fault inside this handler must not loop
    trace::SignalRecord r{};
    r.seq = next_sequence();
    r.time_ns = monotonic_ns();
    r.signal = sig;
    r.tid = current_tid_signal_safe();
    trace_writer().flush_without_waiting(r);
    g_handling.store(false);
  }
  pass_on(sig, info, context);
  // Still here: the program's handler returned and the process lives on (its SIGINT handler,
  // Python's KeyboardInterrupt). Writing goes back to buffered.
  if (!was_write_through) trace_writer().set_write_through_off();
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
    // SA_ONSTACK: on a thread with an alternate signal stack (the program's, Python's faulthandler)
    // the handler runs there, so a stack overflow still reaches the program's own handler.
    action.sa_flags = SA_SIGINFO | SA_RESTART | SA_ONSTACK;
    sigemptyset(&action.sa_mask);
    sigaction(sig, &action, nullptr);
  }
}

}  // namespace cuaudit::inject
