#include "background_thread.h"

#include <pthread.h>
#include <signal.h>

namespace cuaudit::inject {

bool start_background_thread(void* (*main)(void*)) noexcept {
  // The new thread inherits the creating thread's mask: block everything around the creation.
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  pthread_t thread;
  const bool started = pthread_create(&thread, nullptr, main, nullptr) == 0;
  if (started) pthread_detach(thread);
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  return started;
}

}  // namespace cuaudit::inject
