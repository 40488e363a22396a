// A small per-thread set of ids (stacks) this thread already wrote to the trace. Forgetting is
// harmless (the record is written again and the reader deduplicates), so a full set is cleared.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace cuaudit::inject {

class SeenIds {
 public:
  // Returns true if `id` (never 0) was already present; inserts it otherwise.
  bool check_and_insert(uint64_t id) noexcept {
    if (count_ > kSlots * 3 / 4) clear();
    for (size_t i = id % kSlots;; i = (i + 1) % kSlots) {
      if (ids_[i] == id) return true;
      if (ids_[i] == 0) {
        ids_[i] = id;
        ++count_;
        return false;
      }
    }
  }
  void clear() noexcept {
    memset(ids_, 0, sizeof ids_);
    count_ = 0;
  }

 private:
  static constexpr size_t kSlots = 1024;
  uint64_t ids_[kSlots] = {};
  size_t count_ = 0;
};

}  // namespace cuaudit::inject
