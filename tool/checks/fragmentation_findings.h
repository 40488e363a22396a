// Pools cut into holes, as the seeds define fragmentation: the largest block a pool could still
// hand out against all of its free memory (1 - largest free / free). Measured in the replay from
// the blocks and segments every pool recorded (NVTX heaps, CuPy's pool, PyTorch's caching
// allocator), at the moments a pool grows: a request that did not fit in its free memory although
// the free total was enough, so that the pool took a new segment instead, is a miss. A pool whose
// worst miss left it at least --fragmentation-threshold percent fragmented is a `fragmentation`
// finding (docs/FRAGMENTATION.md).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <vector>

#include "replay.h"
#include "report_model.h"
#include "stack_resolver.h"

namespace cuaudit {

struct FragmentationOptions {
  double threshold_percent = 30;  // --fragmentation-threshold
};

// Where a miss's holes were pinned: the live blocks between them, by allocation site.
struct PinningSite {
  uint64_t stack_id = 0, python_stack_id = 0;
  Api api = Api::Count;
  uint64_t bytes = 0, count = 0;
};

// One request that did not fit: the pool just before it grew, and the block that made it grow.
struct PoolMiss {
  MemoryEvent request;
  PoolUsage before;
  uint64_t grew_by = 0;
};

// Sees each pool's growth and the request behind it.
class FragmentationObserver : public ReplayObserver {
 public:
  struct PoolMisses {
    uint64_t count = 0;
    PoolMiss worst;                      // the most fragmented moment
    std::vector<PinningSite> pinning;    // at the worst moment, the biggest sites first (up to 3)
    std::map<uint64_t, uint64_t> sizes;  // request bytes -> misses
  };

  void on_pool_growing(const PoolSegmentFact& segment, const PoolUsage& before, const LiveVisitor& blocks) override;
  void on_live(const MemoryEvent& block) override;

  const std::map<uint32_t, PoolMisses>& misses() const { return misses_; }

 private:
  struct Growing {
    PoolSegmentFact segment;
    PoolUsage before;
    std::vector<PinningSite> pinning;
  };
  std::map<uint32_t, Growing> growing_;  // pool -> the growth whose request is awaited
  std::map<uint32_t, PoolMisses> misses_;
};

std::vector<report::Finding> fragmentation_findings(const ProcessTrace& trace, const FragmentationObserver& observer,
                                                    StackResolver& stacks, const FragmentationOptions& options);

// For tests: one replay of an in-memory trace.
std::vector<report::Finding> fragmentation_findings(const ProcessTrace& trace, StackResolver& stacks,
                                                    const FragmentationOptions& options = {});

}  // namespace cuaudit
