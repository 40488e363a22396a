// libcuaudit-preload.so: interposes free, realloc and operator delete (LD_PRELOAD, set by the
// cuaudit launcher) to catch CUDA host memory handed to the C library. The check is a lookup in
// the set of live pinned and managed pointers that the injection keeps here; on a hit the
// injection records the release *before* the call goes on, because glibc usually aborts the
// process right after. Everything else passes straight through.
//
// This library holds no CUDA state and records nothing itself: the injection connects a reporter
// at initialization. Without the injection (no CUDA in the process) the set stays empty and each
// call costs one atomic load.
#include <dlfcn.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <new>

#include "api_table.h"
#include "host_pointer_set.h"

namespace {

using cuaudit::Api;
using cuaudit::preload::HostPointerSet;
using Reporter = void (*)(int api, void* pointer);

HostPointerSet g_pointers;  // static storage, zero-initialized: usable before any constructor
std::atomic<Reporter> g_reporter{nullptr};

// Set while this thread resolves the next definitions or reports, so that calls made meanwhile
// (dlsym and the recorder may allocate and free) pass through without recursion.
thread_local bool tls_busy = false;

template <typename Fn>
Fn next(const char* name, std::atomic<Fn>& slot) {
  Fn fn = slot.load(std::memory_order_acquire);
  if (!fn && !tls_busy) {
    tls_busy = true;
    fn = reinterpret_cast<Fn>(dlsym(RTLD_NEXT, name));
    tls_busy = false;
    slot.store(fn, std::memory_order_release);
  }
  return fn;
}

std::atomic<void (*)(void*)> g_free{nullptr};
std::atomic<void* (*)(void*, size_t)> g_realloc{nullptr};
std::atomic<void (*)(void*)> g_delete{nullptr};
std::atomic<void (*)(void*)> g_delete_array{nullptr};
std::atomic<void (*)(void*, size_t)> g_sized_delete{nullptr};
std::atomic<void (*)(void*, size_t)> g_sized_delete_array{nullptr};

// Set while a checked call is forwarded: libstdc++'s sized delete calls the unsized one, which
// calls free, all of which resolve back here. They are the same release, reported once.
thread_local int tls_forwarding = 0;
struct Forwarding {
  Forwarding() { ++tls_forwarding; }
  ~Forwarding() { --tls_forwarding; }
};

void check(Api api, void* p) noexcept {
  if (tls_forwarding || tls_busy || !g_pointers.contains(reinterpret_cast<uintptr_t>(p))) return;
  if (Reporter report = g_reporter.load(std::memory_order_acquire)) {
    tls_busy = true;
    report(static_cast<int>(api), p);
    tls_busy = false;
  }
}

void pass_to_free(void* p) noexcept {
  // While free itself is being resolved (dlsym may free), the block is left alone: a few bytes
  // leaked once beat calling the wrong allocator.
  if (auto fn = next("free", g_free)) fn(p);
}

}  // namespace

extern "C" {

__attribute__((visibility("default"))) void free(void* p) {
  check(Api::libc_free, p);
  pass_to_free(p);
}

__attribute__((visibility("default"))) void* realloc(void* p, size_t size) {
  check(Api::libc_realloc, p);
  Forwarding forwarding;
  auto fn = next("realloc", g_realloc);
  return fn ? fn(p, size) : nullptr;
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

}  // extern "C"

// Replaceable global deallocation functions: each checks, then calls the next definition
// (libstdc++'s), or free when the program has none.
__attribute__((visibility("default"))) void operator delete(void* p) noexcept {
  check(Api::cxx_delete, p);
  Forwarding forwarding;
  if (auto fn = next("_ZdlPv", g_delete)) return fn(p);
  pass_to_free(p);
}
__attribute__((visibility("default"))) void operator delete[](void* p) noexcept {
  check(Api::cxx_delete_array, p);
  Forwarding forwarding;
  if (auto fn = next("_ZdaPv", g_delete_array)) return fn(p);
  pass_to_free(p);
}
__attribute__((visibility("default"))) void operator delete(void* p, size_t size) noexcept {
  check(Api::cxx_delete, p);
  Forwarding forwarding;
  if (auto fn = next("_ZdlPvm", g_sized_delete)) return fn(p, size);
  pass_to_free(p);
}
__attribute__((visibility("default"))) void operator delete[](void* p, size_t size) noexcept {
  check(Api::cxx_delete_array, p);
  Forwarding forwarding;
  if (auto fn = next("_ZdaPvm", g_sized_delete_array)) return fn(p, size);
  pass_to_free(p);
}
