// The set of CUDA host pointers (pinned and managed allocations) that libc must never be handed,
// consulted by the free/realloc/delete interposer on every call of the program's heap.
//
// Lookups are lock-free (a seqlock over an open-addressing table): a program's ordinary heap
// traffic pays an atomic load when the set is empty and a hash probe otherwise. Insertions and
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

  bool contains(uintptr_t p) const noexcept;
  bool insert(uintptr_t p) noexcept;  // false when full
  void erase(uintptr_t p) noexcept;
  void clear() noexcept;
  size_t size() const noexcept { return count_.load(std::memory_order_relaxed); }

 private:
  static size_t slot_of(uintptr_t p) noexcept { return ((p >> 4) * 0x9E3779B97F4A7C15ull) >> 48; }
  bool probe(uintptr_t p) const noexcept;
  void lock() noexcept;
  void unlock() noexcept;

  std::atomic<uintptr_t> slots_[kSlots] = {};
  std::atomic<uint32_t> version_{0};  // odd while a writer changes the table
  std::atomic<size_t> count_{0};
  std::atomic_flag writer_ = ATOMIC_FLAG_INIT;
};

}  // namespace cuaudit::preload
