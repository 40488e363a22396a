// libcuaudit-preload.so: interposes free, realloc and operator delete (LD_PRELOAD, set by the
// cuaudit launcher) to catch CUDA host memory handed to the C library, and exit, _exit, _Exit and
// quick_exit so that a process that ends itself without exit hooks still leaves a whole trace. The check is a lookup in
// the set of live pinned and managed pointers that the injection keeps here; on a hit the
// injection records the release *before* the call goes on, because glibc usually aborts the
// process right after. Everything else passes straight through.
//
// This library holds no CUDA state and records nothing itself: the injection connects a reporter
// at initialization. Without the injection (no CUDA in the process) the set stays empty and each
// call costs one atomic load.
#include <dlfcn.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <new>

#include "api_table.h"
#include "host_pointer_set.h"
#include "trace_format.h"

namespace {

using cuaudit::Api;
using cuaudit::preload::HostPointerSet;
using Reporter = void (*)(int api, void* pointer);

HostPointerSet g_pointers;  // static storage, zero-initialized: usable before any constructor
std::atomic<Reporter> g_reporter{nullptr};
std::atomic<void (*)(int, int)> g_exit_reporter{nullptr};

// Until this library's constructor has run, the dynamic loader may already route its own frees
// here (glibc 2.39 does so while it is still relocating, before thread-local storage exists), so
// nothing here may touch TLS or call dlsym. Such early blocks are leaked, which is safe whatever
// allocator made them; early reallocs go to glibc's own.
std::atomic<bool> g_ready{false};

// Static TLS (this library is preloaded): no __tls_get_addr, no lazy allocation.
#define CUAUDIT_TLS thread_local __attribute__((tls_model("initial-exec")))

// Set while this thread reports, so that the recorder's own heap calls pass straight through.
CUAUDIT_TLS bool tls_reporting = false;
// Set while a checked call is forwarded: libstdc++'s sized delete calls the unsized one, which
// calls free, all of which resolve back here. They are the same release, reported once.
CUAUDIT_TLS int tls_forwarding = 0;
struct Forwarding {
  Forwarding() { ++tls_forwarding; }
  ~Forwarding() { --tls_forwarding; }
};

// The next definitions in lookup order (glibc's, or another allocator's), resolved once.
void (*g_free)(void*) = nullptr;
void* (*g_realloc)(void*, size_t) = nullptr;
void (*g_delete)(void*) = nullptr;
void (*g_delete_array)(void*) = nullptr;
void (*g_sized_delete)(void*, size_t) = nullptr;
void (*g_sized_delete_array)(void*, size_t) = nullptr;
void (*g_exit)(int) = nullptr;
void (*g_underscore_exit)(int) = nullptr;
void (*g_quick_exit)(int) = nullptr;

template <typename Fn>
void resolve(Fn& slot, const char* name) {
  slot = reinterpret_cast<Fn>(dlsym(RTLD_NEXT, name));
}

__attribute__((constructor(101))) void resolve_next_definitions() {
  resolve(g_free, "free");
  resolve(g_realloc, "realloc");
  resolve(g_delete, "_ZdlPv");
  resolve(g_delete_array, "_ZdaPv");
  resolve(g_sized_delete, "_ZdlPvm");
  resolve(g_sized_delete_array, "_ZdaPvm");
  resolve(g_exit, "exit");
  resolve(g_underscore_exit, "_exit");
  resolve(g_quick_exit, "quick_exit");
  g_ready.store(g_free && g_realloc && g_exit && g_underscore_exit && g_quick_exit, std::memory_order_release);
  pthread_atfork(nullptr, nullptr, [] { g_pointers.reset_after_fork(); });
}

bool ready() noexcept { return g_ready.load(std::memory_order_acquire); }

void report_release(Api api, void* p) noexcept;

// Inline for the same reason: the common answer is "not CUDA's", from the set's inline filter.
inline void check(Api api, void* p) noexcept {
  if (__builtin_expect(!g_pointers.contains(reinterpret_cast<uintptr_t>(p)), 1)) return;
  report_release(api, p);
}

__attribute__((noinline)) void report_release(Api api, void* p) noexcept {
  if (tls_forwarding || tls_reporting) return;
  if (Reporter report = g_reporter.load(std::memory_order_acquire)) {
    tls_reporting = true;
    report(static_cast<int>(api), p);
    tls_reporting = false;
  }
}

void report_exit(int status, cuaudit::trace::ExitHow how) noexcept {
  if (auto report = g_exit_reporter.load(std::memory_order_acquire)) report(status, static_cast<int>(how));
}

// The process ends before this library's constructor ran: end it as _exit does.
[[noreturn]] void exit_now(int status) noexcept {
  for (;;) syscall(SYS_exit_group, status);
}

}  // namespace

extern "C" void* __libc_realloc(void*, size_t);

extern "C" {

__attribute__((visibility("default"))) void free(void* p) {
  if (!ready()) return;  // leaked: see g_ready
  check(Api::libc_free, p);
  g_free(p);
}

__attribute__((visibility("default"))) void* realloc(void* p, size_t size) {
  if (!ready()) return __libc_realloc(p, size);
  check(Api::libc_realloc, p);
  Forwarding forwarding;
  return g_realloc(p, size);
}

// The injection's side of the contract (resolved with dlsym(RTLD_DEFAULT, ...)).
__attribute__((visibility("default"))) void cuaudit_preload_connect(Reporter reporter) {
  g_reporter.store(reporter, std::memory_order_release);
}
__attribute__((visibility("default"))) int cuaudit_preload_track(void* p) {
  return g_pointers.insert(reinterpret_cast<uintptr_t>(p)) ? 1 : 0;
}
__attribute__((visibility("default"))) void cuaudit_preload_untrack(void* p) {
  g_pointers.erase(reinterpret_cast<uintptr_t>(p));
}
__attribute__((visibility("default"))) void cuaudit_preload_forget_all() { g_pointers.clear(); }
__attribute__((visibility("default"))) void cuaudit_preload_connect_exit(void (*reporter)(int, int)) {
  g_exit_reporter.store(reporter, std::memory_order_release);
}

__attribute__((visibility("default"))) __attribute__((noreturn)) void exit(int status) {
  if (!ready()) {
    // Before this library's constructor (a library constructor of the program calls exit): the C
    // library's exit still runs the atexit handlers and flushes stdio, as it would without us.
    if (!g_exit) resolve(g_exit, "exit");
    if (g_exit) g_exit(status);
    exit_now(status);
  }
  report_exit(status, cuaudit::trace::ExitHow::Exit);
  g_exit(status);
  exit_now(status);
}
__attribute__((visibility("default"))) __attribute__((noreturn)) void _exit(int status) {
  if (!ready()) exit_now(status);
  report_exit(status, cuaudit::trace::ExitHow::UnderscoreExit);
  g_underscore_exit(status);
  exit_now(status);
}
__attribute__((visibility("default"))) __attribute__((noreturn)) void _Exit(int status) { _exit(status); }
__attribute__((visibility("default"))) __attribute__((noreturn)) void quick_exit(int status) {
  if (!ready()) {
    if (!g_quick_exit) resolve(g_quick_exit, "quick_exit");  // its at_quick_exit handlers, as without us
    if (g_quick_exit) g_quick_exit(status);
    exit_now(status);
  }
  report_exit(status, cuaudit::trace::ExitHow::QuickExit);
  g_quick_exit(status);
  exit_now(status);
}

}  // extern "C"

// Replaceable global deallocation functions: each checks, then calls the next definition
// (libstdc++'s), or free when the program has none.
__attribute__((visibility("default"))) void operator delete(void* p) noexcept {
  if (!ready()) return;  // leaked: see g_ready
  check(Api::cxx_delete, p);
  Forwarding forwarding;
  if (g_delete) return g_delete(p);
  g_free(p);  // a program without libstdc++'s definition
}
__attribute__((visibility("default"))) void operator delete[](void* p) noexcept {
  if (!ready()) return;  // leaked: see g_ready
  check(Api::cxx_delete_array, p);
  Forwarding forwarding;
  if (g_delete_array) return g_delete_array(p);
  g_free(p);  // a program without libstdc++'s definition
}
__attribute__((visibility("default"))) void operator delete(void* p, size_t size) noexcept {
  if (!ready()) return;  // leaked: see g_ready
  check(Api::cxx_delete, p);
  Forwarding forwarding;
  if (g_sized_delete) return g_sized_delete(p, size);
  g_free(p);  // a program without libstdc++'s definition
}
__attribute__((visibility("default"))) void operator delete[](void* p, size_t size) noexcept {
  if (!ready()) return;  // leaked: see g_ready
  check(Api::cxx_delete_array, p);
  Forwarding forwarding;
  if (g_sized_delete_array) return g_sized_delete_array(p, size);
  g_free(p);  // a program without libstdc++'s definition
}
