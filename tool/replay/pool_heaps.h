// The heaps of the pools a trace records (memory_sources.inc: NVTX heaps, CuPy's pool, PyTorch's
// caching allocator): the blocks each pool handed out and took back, the segments it handed them
// out of, and what that makes of its memory (reserved, used, the largest free gap). The replay
// keeps CUDA's own allocations in its allocation table and a pool's blocks here, in the manner of
// LeakSanitizer's allocator interface: the checks ask a heap what is live, what contains an
// address, and what each pool holds, not which API made it.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <vector>

#include "memory_ranges.h"
#include "pool_usage.h"
#include "pool_view.h"
#include "released_memory.h"
#include "replay.h"
#include "trace_model.h"

namespace cuaudit {

class PoolHeaps : public PoolsView {
 public:
  // `pools`: what each pool is (ProcessTrace::pools), to tell a framework's from a program's own.
  PoolHeaps(ReplayResult& result, ReplayObserver* observer, const std::map<uint32_t, PoolInfo>* pools = nullptr)
      : result_(result), observer_(observer), pools_(pools) {}

  // A block operation (memory_sources.inc): handed out, resized, taken back, or the pool's end.
  void apply(const MemoryEvent& e);
  // A segment mapped or unmapped (PoolSegment).
  void segment(const PoolSegmentFact& s);
  // A pool without segments said what it held: its usage is that, not measured.
  void figures(const PoolFiguresFact& f);
  // CUDA released `key`: a pool's segment there (the cudaMalloc it took) is gone with it.
  void cuda_released(uint64_t key);

  // The live block containing `address`, or the released one (not handed out again) containing it.
  const MemoryEvent* containing(uint64_t address) const;
  const ReleasedMemory* released_containing(uint64_t address) const;
  uint64_t forgotten_releases() const { return released_.forgotten(); }  // released_memory.h
  // The pool with a segment mapped at exactly `base`, if any.
  std::optional<uint32_t> segment_at(uint64_t base) const;

  void for_each_live(const std::function<void(const MemoryEvent&)>& visit) const {
    for (const auto& [key, block] : live_) visit(block);
  }

  // What pool `pool` holds now (PoolsView).
  PoolUsage usage(uint32_t pool) const override;
  void for_each_block(uint32_t pool, const std::function<void(const MemoryEvent&)>& visit) const override;
  std::vector<SegmentLayout> layout(uint32_t pool) const override;
  std::vector<uint32_t> pools_on(int32_t device) const override;
  // The bytes of the blocks frameworks' pools (PyTorch's, CuPy's) have handed out on `device`:
  // what their segments hold for the program (allocated, beside reserved).
  uint64_t framework_block_bytes(int32_t device) const {
    auto it = framework_bytes_.find(device);
    return it == framework_bytes_.end() ? 0 : it->second;
  }

  // Each pool whose blocks or segments changed since the last call, with its usage now (the
  // timeline's pool series: one usage a sample, for the pools that moved).
  void take_changed(const std::function<void(uint32_t pool, const PoolUsage&)>& visit);

  // The pools that have handed out a block or mapped a segment, in number order.
  std::vector<uint32_t> pools() const;

  // After the last event: every block still handed out leaks, as `end` says.
  void finish(LeakEnd end);

 private:
  struct Segment {
    uint64_t bytes = 0;
    int32_t device = trace::kUnknownDevice;
  };
  using Blocks = std::map<uint64_t, MemoryEvent>;

  void hand_out(const MemoryEvent& e);
  void resize(const MemoryEvent& e);
  void take_back(const MemoryEvent& e);
  void release_pool(const MemoryEvent& e);
  void gone(Blocks::iterator it, const MemoryEvent& release, bool by_program);
  // A block's bytes coming (+) or going (-) in its pool's accounts.
  void account(const MemoryEvent& block, bool coming);
  LeakedAllocation leaked(const MemoryEvent& block, LeakEnd end) const { return {block, end, -1}; }

  ReplayResult& result_;
  ReplayObserver* observer_;
  Blocks live_;              // every pool's blocks handed out, by address
  ReleasedRanges released_;  // blocks taken back and not handed out again (the most recent)
  std::map<uint32_t, std::map<uint64_t, Segment>> segments_;        // pool -> base -> segment
  std::map<uint32_t, uint64_t> used_;                               // pool -> bytes handed out
  std::map<uint32_t, std::map<int32_t, PoolFiguresFact>> figures_;  // pool -> device -> what it said last
  const std::map<uint32_t, PoolInfo>* pools_;
  std::map<int32_t, uint64_t> framework_bytes_;  // device -> bytes of frameworks' blocks
  std::set<uint32_t> changed_;                   // pools changed since take_changed
};

}  // namespace cuaudit
