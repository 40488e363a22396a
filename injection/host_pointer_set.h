// The set of CUDA host pointers (pinned and managed allocations) that libc must never be handed,
// consulted by the free/realloc/delete interposer on every call of the program's heap.
//
// Lookups are lock-free: a program's ordinary heap traffic pays an atomic load when the set is
// empty, and otherwise one bit test in an 8 KiB filter that stays in the L1 cache; only pointers
// whose filter bit is set probe the table (a seqlock over open addressing). Insertions and
// removals, made only by CUDA allocation calls, take a spin flag. Capacity is fixed; pointers that
// do not fit are not checked (never a false report).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace cuaudit::preload {

class HostPointerSet {
 public:
  static constexpr size_t kSlots = size_t{1} << 16;

  // Inline: this is the whole cost of free() for memory that is not CUDA's.
  bool contains(uintptr_t p) const noexcept {
    if (count_.load(std::memory_order_relaxed) == 0) return false;
    const size_t bit = filter_bit_of(p);
    if (!(filter_[bit / 64].load(std::memory_order_relaxed) & (uint64_t{1} << (bit % 64)))) return false;
    return p != 0 && contains_slow(p);
  }
  bool insert(uintptr_t p) noexcept;  // false when full
  void erase(uintptr_t p) noexcept;
  void clear() noexcept;
  // In a forked child: a writer of the parent (another thread adding a pinned allocation at the
  // fork) does not exist here; its half-taken lock would make every reader spin for ever.
  void reset_after_fork() noexcept;
  void simulate_fork_inside_insert() noexcept { lock(); }  // tests: the state a fork can leave
  size_t size() const noexcept { return count_.load(std::memory_order_relaxed); }

 private:
  static constexpr size_t kFilterBits = size_t{1} << 16;

  static size_t slot_of(uintptr_t p) noexcept { return ((p >> 4) * 0x9E3779B97F4A7C15ull) >> 48; }
  static size_t filter_bit_of(uintptr_t p) noexcept { return ((p >> 4) * 0xFF51AFD7ED558CCDull) >> 48; }
  bool probe(uintptr_t p) const noexcept;
  bool contains_slow(uintptr_t p) const noexcept;
  void rebuild_filter() noexcept;
  void lock() noexcept;
  void unlock() noexcept;

  std::atomic<uintptr_t> slots_[kSlots] = {};
  // A bit per hash of every pointer inserted since the last rebuild: clear means absent.
  std::atomic<uint64_t> filter_[kFilterBits / 64] = {};
  size_t erased_since_rebuild_ = 0;   // writer only
  std::atomic<uint32_t> version_{0};  // odd while a writer changes the table
  std::atomic<size_t> count_{0};
  std::atomic_flag writer_ = ATOMIC_FLAG_INIT;
};

}  // namespace cuaudit::preload
