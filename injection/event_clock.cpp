#include "event_clock.h"

#include <atomic>

namespace cuaudit::inject {
namespace {

std::atomic<uint64_t>& sequence() noexcept {
  static std::atomic<uint64_t>* s = new std::atomic<uint64_t>(1);  // immortal
  return *s;
}

std::atomic<uint64_t> g_allocation_epoch{0};
std::atomic<uint64_t> g_release_epoch{0};
std::atomic<uint64_t> g_launches{0};
thread_local uint32_t tls_unpublished_launches = 0;

}  // namespace

uint64_t next_sequence() noexcept { return sequence().fetch_add(1, std::memory_order_relaxed); }

void note_launch() noexcept {
  if (++tls_unpublished_launches == 64) {
    g_launches.fetch_add(64, std::memory_order_relaxed);
    tls_unpublished_launches = 0;
  }
}

uint64_t launches_so_far() noexcept { return g_launches.load(std::memory_order_relaxed); }

uint64_t allocation_epoch() noexcept { return g_allocation_epoch.load(std::memory_order_acquire); }
uint64_t release_epoch() noexcept { return g_release_epoch.load(std::memory_order_acquire); }
void note_allocation() noexcept { g_allocation_epoch.fetch_add(1, std::memory_order_acq_rel); }
void note_release() noexcept { g_release_epoch.fetch_add(1, std::memory_order_acq_rel); }

}  // namespace cuaudit::inject
