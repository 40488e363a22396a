// What one pool's memory looks like at one moment (mimalloc's area statistics): its segments'
// bytes, the blocks it handed out, the free bytes between them and the largest free gap, from
// which the seeds' fragmentation ratio follows. Computed by the pools' heaps (pool_heaps.h).
#pragma once

#include <cstddef>
#include <cstdint>

namespace cuaudit {

struct PoolUsage {
  uint64_t reserved = 0;      // the bytes of its segments
  uint64_t used = 0;          // the bytes of the blocks it has handed out
  uint64_t free = 0;          // of its segments' bytes, those no handed-out block covers
  uint64_t largest_free = 0;  // the largest gap between handed-out blocks inside one segment
  size_t segments = 0;
  size_t blocks = 0;
  // The seeds' fragmentation ratio: 1 - largest free / free (0 when nothing is free).
  double fragmentation() const { return free ? 1.0 - static_cast<double>(largest_free) / free : 0.0; }
};

}  // namespace cuaudit
