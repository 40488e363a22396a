// What one pool's memory looks like at one moment (mimalloc's area statistics): its segments'
// bytes, the blocks it handed out, the free bytes between them and the largest free gap, from
// which the seeds' fragmentation ratio follows. Computed by the pools' heaps (pool_heaps.h).
#pragma once

#include <cstddef>
#include <cstdint>

namespace cuaudit {

inline constexpr uint64_t kRoundingGap = 512;

struct PoolUsage {
  uint64_t reserved = 0;      // the bytes of its segments
  uint64_t used = 0;          // the bytes of the blocks it has handed out
  uint64_t free = 0;          // of its segments' bytes, those no handed-out block covers
  uint64_t largest_free = 0;  // the largest gap between handed-out blocks inside one segment
  // Of `free`, the bytes in gaps under kRoundingGap: what a framework's rounding leaves after each
  // block (CuPy records the size asked for and hands out a multiple of 512 bytes), not holes.
  uint64_t rounding_slack = 0;
  size_t segments = 0;
  size_t blocks = 0;
  // The seeds' fragmentation ratio: 1 - largest free / free (0 when nothing is free).
  double fragmentation() const { return free ? 1.0 - static_cast<double>(largest_free) / free : 0.0; }
  // Free memory in holes a request could use, and the ratio over it (the fragmentation check's).
  uint64_t hole_bytes() const { return free - rounding_slack; }
  double hole_fragmentation() const {
    return hole_bytes() ? 1.0 - static_cast<double>(largest_free) / hole_bytes() : 0.0;
  }
};

}  // namespace cuaudit
