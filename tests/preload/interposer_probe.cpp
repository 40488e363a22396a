// Runs under LD_PRELOAD=libcuaudit-preload.so, without CUDA: plays the injection's part (connect
// a reporter, track pointers) and checks that free, realloc and delete of tracked pointers are
// reported before they go on, and that everything else passes through unreported.
#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
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
void expect(bool ok, const char* what) {
  std::printf("%s %s\n", ok ? "PASS" : "FAIL", what);
  failures += !ok;
}

template <typename Fn>
Fn find(const char* name) {
  return reinterpret_cast<Fn>(dlsym(RTLD_DEFAULT, name));
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
  std::printf("%d passed, %d failed\n", 5 - failures, failures);
  return failures ? 1 : 0;
}
