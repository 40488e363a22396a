// The replay's live memory seen as one (internal to the replay): CUDA's allocation table and the
// pools' heaps answer together who holds an address, pools first (the block the program was given
// lies inside the pool's segment); the launch-argument judgement asks it, and it keeps the replay's
// Ownership record (ownership.h) up to date as segments, CUDA allocations and blocks come.
#pragma once

#include <cstdint>
#include <optional>

#include "allocation_table.h"
#include "ownership.h"
#include "pool_heaps.h"

namespace cuaudit::replay_detail {

struct LiveOwner {
  const MemoryEvent* allocation = nullptr;  // valid until the replay's next event
  Owner owner;
};

class MemoryOwners {
 public:
  MemoryOwners(ReplayResult& result, ReplayObserver* observer, const AllocationTable& table, const PoolHeaps& pools)
      : result_(result), observer_(observer), table_(table), pools_(pools) {}

  // What holds `address` now: a pool's block first, else CUDA's allocation (a pool's reserve or the
  // program's own); nothing when no live memory contains it.
  std::optional<LiveOwner> owner_of(uint64_t address) const;

  // The replay tells it what changed, after applying it.
  void cuda_allocated(const MemoryEvent& e);      // a pool's segment may already lie there
  void segment_mapped(const PoolSegmentFact& s);  // the CUDA allocation at its base is the pool's
  void block_handed_out(const MemoryEvent& block);

  // A pointer a launch was given (LaunchParam): inside live memory, or inside memory released and
  // not allocated again; a block the pool took back is stale although its segment is live.
  void judge_launch_param(const Event& e, bool in_graph_memory);

 private:
  void take_as_reserve(const MemoryEvent& allocation, uint32_t pool);

  ReplayResult& result_;
  ReplayObserver* observer_;
  const AllocationTable& table_;
  const PoolHeaps& pools_;
};

}  // namespace cuaudit::replay_detail
