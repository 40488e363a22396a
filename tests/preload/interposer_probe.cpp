// Runs under LD_PRELOAD=libcuaudit-preload.so, without CUDA: plays the injection's part (connect
// a reporter, track pointers) and checks that free, realloc and delete of tracked pointers are
// reported before they go on, and that everything else passes through unreported; and that a
// child forked while another thread was inside the pointer set's writer can still use it.
#include <dlfcn.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

#include "api_table.h"

namespace {

struct Report {
  int api;
  void* pointer;
};
Report g_reports[16];
int g_count = 0;

void reporter(int api, void* p) {
  if (g_count < 16) g_reports[g_count++] = {api, p};
}

int failures = 0;
int checks = 0;
void expect(bool ok, const char* what) {
  std::printf("%s %s\n", ok ? "PASS" : "FAIL", what);
  failures += !ok;
  ++checks;
}

template <typename Fn>
Fn find(const char* name) {
  return reinterpret_cast<Fn>(dlsym(RTLD_DEFAULT, name));
}

// Whether `child` ends by itself within `seconds` (a hung child is killed).
bool ends_by_itself(pid_t child, int seconds) {
  for (int waited_ms = 0; waited_ms < seconds * 1000; waited_ms += 5) {
    int status = 0;
    if (waitpid(child, &status, WNOHANG) == child) return WIFEXITED(status) && WEXITSTATUS(status) == 0;
    const timespec pause{0, 5 * 1000 * 1000};
    nanosleep(&pause, nullptr);
  }
  kill(child, SIGKILL);
  waitpid(child, nullptr, 0);
  return false;
}

// One thread keeps the set's writer busy (as the injection does while the program allocates pinned
// memory); the main thread forks again and again. Each child tracks a pointer and frees a tracked
// one: a lock or an odd version inherited from the fork would make it wait for ever.
bool forked_children_do_not_hang(int (*track)(void*), void (*untrack)(void*)) {
  void* live = std::malloc(64);
  track(live);
  std::atomic<bool> stop{false};
  std::thread churn([&] {
    std::vector<void*> blocks(64);
    for (void*& b : blocks) b = std::malloc(16);
    while (!stop.load(std::memory_order_relaxed)) {
      for (void* b : blocks) track(b);
      for (void* b : blocks) untrack(b);
    }
    for (void* b : blocks) std::free(b);
  });
  int hung = 0;
  for (int i = 0; i < 200; ++i) {
    const pid_t child = fork();
    if (child == 0) {
      static int mine;
      track(&mine);
      std::free(live);
      _exit(0);
    }
    if (child > 0 && !ends_by_itself(child, 10)) {
      ++hung;
      break;  // one is proof enough
    }
  }
  stop = true;
  churn.join();
  untrack(live);
  std::free(live);
  if (hung) std::printf("a forked child hung (killed after 10 s)\n");
  return hung == 0;
}

}  // namespace

int main() {
  auto connect = find<void (*)(void (*)(int, void*))>("cuaudit_preload_connect");
  auto track = find<int (*)(void*)>("cuaudit_preload_track");
  auto untrack = find<void (*)(void*)>("cuaudit_preload_untrack");
  if (!connect || !track || !untrack) {
    std::printf("FAIL libcuaudit-preload.so is not preloaded\n");
    return 1;
  }
  connect(reporter);

  void* untracked = std::malloc(64);
  std::free(untracked);
  std::vector<int> ordinary(1000);  // ordinary heap traffic: never reported
  ordinary.clear();
  ordinary.shrink_to_fit();
  expect(g_count == 0, "ordinary heap traffic is not reported");

  void* a = std::malloc(64);
  track(a);
  std::free(a);
  expect(g_count == 1 && g_reports[0].api == int(cuaudit::Api::libc_free) && g_reports[0].pointer == a,
         "free of a tracked pointer is reported as free");
  untrack(a);

  void* b = std::malloc(64);
  track(b);
  void* c = std::realloc(b, 128);
  expect(g_count == 2 && g_reports[1].api == int(cuaudit::Api::libc_realloc) && g_reports[1].pointer == b,
         "realloc of a tracked pointer is reported as realloc");
  untrack(b);
  std::free(c);

  int* d = new int(7);
  track(d);
  delete d;
  expect(g_count == 3 && g_reports[2].api == int(cuaudit::Api::cxx_delete), "delete is reported as operator delete");
  untrack(d);

  int* e = new int[9];
  track(e);
  delete[] e;
  expect(g_count == 4 && g_reports[3].api == int(cuaudit::Api::cxx_delete_array),
         "delete[] is reported as operator delete[]");
  untrack(e);

  void* f = std::malloc(32);
  std::free(f);
  expect(g_count == 4, "untracked pointers pass through unreported");
  expect(forked_children_do_not_hang(track, untrack), "children forked while a thread tracks pointers do not hang");
  std::printf("%d passed, %d failed\n", checks - failures, failures);
  return failures ? 1 : 0;
}
