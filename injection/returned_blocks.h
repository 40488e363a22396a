// The blocks an NVTX-annotated pool took back most recently, for the launch checks (a kernel argument
// must not point into one) and forgotten when the pool hands their memory out again. Each pool
// operation asks "which returned blocks overlap this one?" and each launch "is this pointer in one?":
// a single list of 256 blocks cost about 1,700 instructions a block pair to scan. So the blocks are
// kept by the 64 KiB region they lie in (a ring of the latest few per region, regions folded onto
// 16 rings) and blocks that cross a region's border in a ring of their own, scanned every time:
// a small block is looked for in its region's ring and the wide ring only. The rings forget the
// oldest first; a block no longer remembered is not checked (never a false report).
#pragma once

#include <cstddef>
#include <cstdint>

namespace cuaudit::inject {

class ReturnedBlocks {
 public:
  static constexpr int kRegionShift = 16;  // 64 KiB
  static constexpr size_t kRegionRings = 16, kPerRegionRing = 16, kWide = 32;

  // Block [start, end) taken back. Memory handed out was forgotten then, so no block remembered
  // overlaps it (unless a pool's annotations return a block twice: then both are, harmlessly).
  void add(uint64_t start, uint64_t end) noexcept {
    if (one_region(start, end)) {
      rings_[ring_of(start)].remember(start, end);
    } else {
      wide_.remember(start, end);
    }
  }

  // Memory [start, end) handed out again: every remembered block overlapping it is forgotten.
  void forget(uint64_t start, uint64_t end) noexcept {
    wide_.forget(start, end);
    const uint64_t first = start >> kRegionShift, last = (end - 1) >> kRegionShift;
    if (last - first >= kRegionRings) {
      for (auto& ring : rings_) ring.forget(start, end);
      return;
    }
    for (uint64_t region = first; region <= last; ++region) rings_[region % kRegionRings].forget(start, end);
  }

  bool contains(uint64_t pointer) const noexcept {
    return wide_.contains(pointer) || rings_[ring_of(pointer)].contains(pointer);
  }

 private:
  template <size_t kCapacity>
  struct Ring {
    struct Range {
      uint64_t start = 0, end = 0;  // empty: both 0
    } ranges[kCapacity];
    size_t next = 0;  // the oldest, replaced next
    size_t used = 0;  // ranges not empty: an empty ring is not scanned

    void remember(uint64_t start, uint64_t end) noexcept {
      used += ranges[next].end == 0;
      ranges[next] = {start, end};
      next = (next + 1) % kCapacity;
    }
    void forget(uint64_t start, uint64_t end) noexcept {
      if (used == 0) return;
      for (Range& r : ranges) {
        if (r.start < end && start < r.end) r = {}, --used;
      }
    }
    bool contains(uint64_t pointer) const noexcept {
      if (used == 0) return false;
      bool found = false;
      for (const Range& r : ranges) found |= pointer >= r.start && pointer < r.end;
      return found;
    }
  };

  static bool one_region(uint64_t start, uint64_t end) noexcept {
    return start >> kRegionShift == (end - 1) >> kRegionShift;
  }
  static size_t ring_of(uint64_t address) noexcept { return (address >> kRegionShift) % kRegionRings; }

  Ring<kPerRegionRing> rings_[kRegionRings];
  Ring<kWide> wide_;
};

}  // namespace cuaudit::inject
