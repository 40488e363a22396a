#include "ownership.h"

namespace cuaudit {
namespace {

const std::map<uint32_t, PoolInfo>& no_pools() {
  static const std::map<uint32_t, PoolInfo> none;
  return none;
}

}  // namespace

Owner owner_of_event(const MemoryEvent& e, const std::map<uint32_t, PoolInfo>& pools) {
  if (!is_block_op(e.api)) return {};
  Owner o{Holding::Block, api_info(e.api).source, e.pool};
  // The pool's record says what it is when there is one; a block's operation names its source anyway.
  if (auto it = pools.find(e.pool); it != pools.end()) o.source = it->second.kind;
  return o;
}

Owner pool_reserve_owner(const std::map<uint32_t, PoolInfo>& pools, uint32_t pool) {
  Owner o{Holding::Reserve, MemorySource::Cuda, pool};
  if (auto it = pools.find(pool); it != pools.end()) o.source = it->second.kind;
  return o;
}

Owner Ownership::owner(const MemoryEvent& allocation) const {
  const std::map<uint32_t, PoolInfo>& pools = pools_ ? *pools_ : no_pools();
  if (is_block_op(allocation.api)) return owner_of_event(allocation, pools);
  const std::optional<uint32_t> pool = segment_of(allocation);
  return pool ? pool_reserve_owner(pools, *pool) : Owner{};
}

std::optional<uint32_t> Ownership::segment_of(const MemoryEvent& allocation) const {
  if (is_block_op(allocation.api)) return std::nullopt;
  auto it = reserves_.find(allocation.seq);
  if (it == reserves_.end()) return std::nullopt;
  return it->second;
}

}  // namespace cuaudit
