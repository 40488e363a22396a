#include "memory_owners.h"

namespace cuaudit::replay_detail {

std::optional<LiveOwner> MemoryOwners::owner_of(uint64_t address) const {
  if (const MemoryEvent* block = pools_.containing(address)) return LiveOwner{block, result_.ownership.owner(*block)};
  if (const MemoryEvent* inside = table_.containing(address))
    return LiveOwner{inside, result_.ownership.owner(*inside)};
  return std::nullopt;
}

void MemoryOwners::take_as_reserve(const MemoryEvent& allocation, uint32_t pool) {
  if (result_.ownership.take_as_reserve(allocation, pool) && observer_) observer_->on_reserve(allocation, pool);
}

void MemoryOwners::cuda_allocated(const MemoryEvent& e) {
  if (e.result != 0 || e.key == 0) return;
  if (std::optional<uint32_t> pool = pools_.segment_at(e.key)) take_as_reserve(e, *pool);
}

void MemoryOwners::segment_mapped(const PoolSegmentFact& s) {
  if (!s.mapped) return;
  if (const MemoryEvent* cuda = table_.live_at(s.base)) take_as_reserve(*cuda, s.pool);
}

// A pool that says nothing of its segments (XLA's) hands its blocks out of CUDA memory it took all
// the same: the allocation around a block is that pool's reserve.
void MemoryOwners::block_handed_out(const MemoryEvent& block) {
  if (block.key == 0) return;
  if (const MemoryEvent* cuda = table_.containing(block.key)) take_as_reserve(*cuda, block.pool);
}

void MemoryOwners::judge_launch_param(const Event& e, bool in_graph_memory) {
  LaunchParamJudgement j{e, {}, {}, {}, 0};
  const uint64_t value = e.launch_param().value;
  const std::optional<LiveOwner> live = owner_of(value);
  if (live) {
    j.live = *live->allocation;
    j.offset = value - live->allocation->key;
  }
  // Graph memory exists only while its graph runs: a kernel node given it was checked when the
  // memory was not there (the driver knows no memory at the address then).
  if (!j.live && in_graph_memory && e.launch_param().problem == trace::LaunchProblem::NotAccessible) return;
  if (!live || !live->owner.is_block()) {
    const ReleasedMemory* r = pools_.released_containing(value);
    if (!r && !j.live) r = table_.released_containing(value);  // live memory, not a returned block
    if (r) {
      j.live.reset();
      j.freed = r->allocation;
      j.release = r->release;
      j.offset = value - r->allocation.key;
    }
  }
  result_.launch_params.push_back(std::move(j));
}

}  // namespace cuaudit::replay_detail
