#include "host_pointer_set.h"

#include <sched.h>

namespace cuaudit::preload {

static_assert(HostPointerSet::kSlots == size_t{1} << 16, "slot_of keeps the top 16 bits of the hash");

bool HostPointerSet::probe(uintptr_t p) const noexcept {
  for (size_t i = slot_of(p), n = 0; n < kSlots; i = (i + 1) % kSlots, ++n) {
    const uintptr_t v = slots_[i].load(std::memory_order_relaxed);
    if (v == p) return true;
    if (v == 0) return false;
  }
  return false;
}

bool HostPointerSet::contains_slow(uintptr_t p) const noexcept {
  for (;;) {
    const uint32_t before = version_.load(std::memory_order_acquire);
    if (before & 1) {
      sched_yield();
      continue;
    }
    const bool found = probe(p);
    std::atomic_thread_fence(std::memory_order_acquire);
    if (version_.load(std::memory_order_relaxed) == before) return found;
  }
}

void HostPointerSet::reset_after_fork() noexcept {
  if (version_.load(std::memory_order_relaxed) & 1) version_.fetch_add(1, std::memory_order_relaxed);
  writer_.clear(std::memory_order_release);
}

void HostPointerSet::lock() noexcept {
  while (writer_.test_and_set(std::memory_order_acquire)) sched_yield();
  version_.fetch_add(1, std::memory_order_acq_rel);
}

void HostPointerSet::unlock() noexcept {
  version_.fetch_add(1, std::memory_order_release);
  writer_.clear(std::memory_order_release);
}

bool HostPointerSet::insert(uintptr_t p) noexcept {
  if (p == 0) return true;
  lock();
  bool inserted = false;
  if (count_.load(std::memory_order_relaxed) < kSlots * 3 / 4) {
    // Before the slot: a reader that sees the pointer can only be freeing it after this call
    // returned it to the program, so it also sees the bit.
    const size_t bit = filter_bit_of(p);
    filter_[bit / 64].fetch_or(uint64_t{1} << (bit % 64), std::memory_order_relaxed);
    for (size_t i = slot_of(p);; i = (i + 1) % kSlots) {
      const uintptr_t v = slots_[i].load(std::memory_order_relaxed);
      if (v == p) {
        inserted = true;
        break;
      }
      if (v == 0) {
        slots_[i].store(p, std::memory_order_relaxed);
        count_.fetch_add(1, std::memory_order_relaxed);
        inserted = true;
        break;
      }
    }
  }
  unlock();
  return inserted;
}

void HostPointerSet::erase(uintptr_t p) noexcept {
  if (p == 0 || count_.load(std::memory_order_relaxed) == 0) return;
  lock();
  size_t i = slot_of(p);
  for (;; i = (i + 1) % kSlots) {
    const uintptr_t v = slots_[i].load(std::memory_order_relaxed);
    if (v == 0) {
      unlock();
      return;
    }
    if (v == p) break;
  }
  // Backward-shift deletion keeps probe chains unbroken without tombstones.
  for (size_t hole = i, j = (i + 1) % kSlots;; j = (j + 1) % kSlots) {
    const uintptr_t v = slots_[j].load(std::memory_order_relaxed);
    if (v == 0) {
      slots_[hole].store(0, std::memory_order_relaxed);
      break;
    }
    const size_t home = slot_of(v);
    // Move v into the hole unless its home lies cyclically in (hole, j].
    const bool stays = hole <= j ? (home > hole && home <= j) : (home > hole || home <= j);
    if (!stays) {
      slots_[hole].store(v, std::memory_order_relaxed);
      hole = j;
    }
  }
  count_.fetch_sub(1, std::memory_order_relaxed);
  if (++erased_since_rebuild_ > kFilterBits / 8) rebuild_filter();
  unlock();
}

// Drops the bits of erased pointers. Each word goes from its old value to a subset of it that
// keeps every present pointer's bit, so a concurrent reader never misses a present pointer.
// Called with the writer flag held.
void HostPointerSet::rebuild_filter() noexcept {
  static uint64_t fresh[kFilterBits / 64];  // only the writer touches it
  for (auto& w : fresh) w = 0;
  for (const auto& slot : slots_) {
    if (const uintptr_t v = slot.load(std::memory_order_relaxed)) {
      const size_t bit = filter_bit_of(v);
      fresh[bit / 64] |= uint64_t{1} << (bit % 64);
    }
  }
  for (size_t i = 0; i < kFilterBits / 64; ++i) filter_[i].store(fresh[i], std::memory_order_relaxed);
  erased_since_rebuild_ = 0;
}

void HostPointerSet::clear() noexcept {
  lock();
  for (auto& s : slots_) s.store(0, std::memory_order_relaxed);
  for (auto& w : filter_) w.store(0, std::memory_order_relaxed);
  count_.store(0, std::memory_order_relaxed);
  erased_since_rebuild_ = 0;
  unlock();
}

}  // namespace cuaudit::preload
