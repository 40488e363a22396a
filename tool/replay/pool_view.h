// What the replay's observers may ask of the pools at the moment a hook runs (pool_heaps.h keeps
// them): a pool's usage, its blocks, and the layout of its segments (for a picture of its holes).
// An interface, so that replay.h needs no pool heap and an observer cannot change one.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "pool_usage.h"
#include "trace_model.h"

namespace cuaudit {

// One segment of a pool and the blocks handed out inside it, in address order. The pointers are
// valid only during the hook that asked.
struct SegmentLayout {
  uint64_t base = 0, bytes = 0;
  std::vector<const MemoryEvent*> blocks;
};

class PoolsView {
 public:
  virtual PoolUsage usage(uint32_t pool) const = 0;
  virtual void for_each_block(uint32_t pool, const std::function<void(const MemoryEvent&)>& visit) const = 0;
  virtual std::vector<SegmentLayout> layout(uint32_t pool) const = 0;
  // The pools with a segment on `device`.
  virtual std::vector<uint32_t> pools_on(int32_t device) const = 0;

 protected:
  ~PoolsView() = default;
};

}  // namespace cuaudit
