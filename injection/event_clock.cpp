#include "event_clock.h"

#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <atomic>

#include "trace_format.h"

namespace cuaudit::inject {
namespace {

// Constant-initialized with a trivial destructor: usable from a signal handler at the process's
// first event (no guard, no allocation) and after static destructors.
std::atomic<uint64_t> g_sequence{1};

std::atomic<uint64_t> g_allocation_epoch{0};
std::atomic<uint64_t> g_release_epoch{0};
std::atomic<uint64_t> g_pool_block_epoch{0};
std::atomic<uint64_t> g_launches{0};
thread_local uint32_t tls_unpublished_launches = 0;

}  // namespace

uint64_t next_sequence() noexcept { return g_sequence.fetch_add(1, std::memory_order_relaxed); }

void note_launch() noexcept {
  if (++tls_unpublished_launches == trace::kLaunchCountBatch) {
    g_launches.fetch_add(trace::kLaunchCountBatch, std::memory_order_relaxed);
    tls_unpublished_launches = 0;
  }
}

uint64_t launches_so_far() noexcept { return g_launches.load(std::memory_order_relaxed); }

uint64_t allocation_epoch() noexcept { return g_allocation_epoch.load(std::memory_order_acquire); }
uint64_t release_epoch() noexcept { return g_release_epoch.load(std::memory_order_acquire); }
void note_allocation() noexcept { g_allocation_epoch.fetch_add(1, std::memory_order_acq_rel); }
void note_release() noexcept { g_release_epoch.fetch_add(1, std::memory_order_acq_rel); }
uint64_t pool_block_epoch() noexcept { return g_pool_block_epoch.load(std::memory_order_acquire); }
void note_pool_block_change() noexcept { g_pool_block_epoch.fetch_add(1, std::memory_order_acq_rel); }

namespace {
std::atomic<uint64_t> g_lowest_address{UINT64_MAX};
std::atomic<uint64_t> g_highest_end{0};
}  // namespace

void note_handed_out(uint64_t start, uint64_t bytes) noexcept {
  if (bytes == 0) return;
  uint64_t low = g_lowest_address.load(std::memory_order_relaxed);
  while (start < low && !g_lowest_address.compare_exchange_weak(low, start, std::memory_order_relaxed)) {
  }
  uint64_t high = g_highest_end.load(std::memory_order_relaxed);
  while (start + bytes > high && !g_highest_end.compare_exchange_weak(high, start + bytes, std::memory_order_relaxed)) {
  }
}

bool in_handed_out_range(uint64_t value) noexcept {
  return value >= g_lowest_address.load(std::memory_order_relaxed) &&
         value < g_highest_end.load(std::memory_order_relaxed);
}

uint64_t monotonic_ns() noexcept {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

uint64_t realtime_ns() noexcept {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

namespace {
thread_local uint32_t tls_tid = 0;  // reset in a forked child, whose only thread has a new id
}

uint32_t current_tid_signal_safe() noexcept { return static_cast<uint32_t>(syscall(SYS_gettid)); }

uint32_t current_tid() noexcept {
  if (tls_tid == 0) tls_tid = static_cast<uint32_t>(syscall(SYS_gettid));
  return tls_tid;
}

void forget_current_tid() noexcept { tls_tid = 0; }

}  // namespace cuaudit::inject
