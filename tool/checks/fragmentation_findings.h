// Pools cut into holes, as the seeds define fragmentation: the largest block a pool could still
// hand out against all of its free memory (1 - largest free / free). Measured in the replay from
// the blocks and segments every pool recorded (NVTX heaps, CuPy's pool, PyTorch's caching
// allocator), at two kinds of moments:
// - a pool grows: a request that did not fit in its free memory although the free total was
//   enough, so that the pool took a new segment instead, is a miss;
// - a memory sample: a pool that cannot grow (an NVTX heap: its range is fixed) at least half
//   full and at least --fragmentation-threshold percent fragmented is under pressure; a long
//   stretch of it (a tenth of the run, and 100 ms) is reported although no request was seen to
//   fail (the heap's owner sees that, cuaudit does not). A pool that can grow shows its pressure
//   as misses: holes a pool never had to miss in did no harm (a framework's cache always has some).
// A pool whose worst miss left it at least --fragmentation-threshold percent fragmented, or that
// stayed under pressure that long, is one `fragmentation` finding (docs/FRAGMENTATION.md).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <vector>

#include "pool_picture.h"
#include "replay.h"
#include "report_model.h"
#include "run_bounds.h"
#include "stack_resolver.h"

namespace cuaudit {

struct FragmentationOptions {
  double threshold_percent = 30;  // --fragmentation-threshold
  // A pool that can grow is reported when it missed at least this often and what it took instead
  // came to at least this share of its peak reserve: one miss now and then is what any caching
  // allocator does (a new segment while the holes sit in others), a pool that keeps missing pays
  // for its holes.
  uint64_t min_misses = 3;
  double min_grown_share = 0.1;
  // And a miss counts only when the holes were at least this share of what the pool had reserved:
  // a pool nearly full that misses in its last few percent is growing, not paying for holes (a
  // ResNet-50's PyTorch cache in its first steps missed 65 times with 6% of it free, on the H200).
  double min_hole_share = 0.2;
  // And the misses came after the pool's warm-up: the last one at least this share into the time
  // the pool handed out blocks (its first block to its last). A cache that misses a few times
  // while it fills in the first steps and then serves every request has paid once (ResNet-50's
  // PyTorch cache missed 3 times around 1.5 s and then served 12 s of training, on the H200); a
  // pool cut into holes and then asked for larger blocks misses late, in one burst or over days.
  // (Measured from the first miss to the last before, a burst of misses at the end of a quick
  // program, the seeds' own story, was missed: CuPy's fragment case on the H200.)
  double min_miss_spread = 0.25;
};

// A stretch under pressure counts when it lasted this share of the run, and at least kMinStretchNs.
inline constexpr double kStretchRunShare = 0.1;
inline constexpr uint64_t kMinStretchNs = 100'000'000;

// One request that did not fit: the pool just before it grew, and the block that made it grow.
struct PoolMiss {
  MemoryEvent request;
  PoolUsage before;
  uint64_t grew_by = 0;
};

// A time a pool stayed at least half full and fragmented at or above the threshold.
struct PressureStretch {
  uint64_t from_ns = 0, to_ns = 0;
  uint64_t worst_ns = 0;
  PoolUsage worst;
  PoolSnapshot snapshot;  // the pool at its worst moment
  uint64_t ns() const { return to_ns - from_ns; }
};

// Sees each pool's growth and the request behind it, and each pool's samples.
class FragmentationObserver : public ReplayObserver {
 public:
  struct PoolMisses {
    uint64_t count = 0;
    PoolMiss worst;                      // the most fragmented moment
    PoolSnapshot snapshot;               // the pool then
    std::map<uint64_t, uint64_t> sizes;  // request bytes -> misses
    uint64_t grown = 0;                  // the bytes of the segments it took instead
    uint64_t first_ns = 0, last_ns = 0;  // when the first and the last miss came
  };

  // `pools`: what each pool is (ProcessTrace::pools): only a pool that cannot grow has stretches.
  FragmentationObserver(const std::map<uint32_t, PoolInfo>& pools, const FragmentationOptions& options)
      : pools_(pools), options_(options) {}

  void on_pool_growing(const PoolSegmentFact& segment, const PoolUsage& before, const PoolsView& pools) override;
  void on_live(const MemoryEvent& block) override;
  void on_pool_sample(const MemorySample& s, uint32_t pool, const PoolUsage& usage, const PoolsView& pools) override;

  const std::map<uint32_t, PoolMisses>& misses() const { return misses_; }
  // The most a pool reserved over the run.
  uint64_t peak_reserved(uint32_t pool) const {
    const auto it = peak_reserved_.find(pool);
    return it == peak_reserved_.end() ? 0 : it->second;
  }
  // When a pool handed out its first block and its last one (0, 0: none).
  std::pair<uint64_t, uint64_t> handing_out(uint32_t pool) const {
    const auto it = handing_out_.find(pool);
    return it == handing_out_.end() ? std::pair<uint64_t, uint64_t>{0, 0} : it->second;
  }
  // Each pool's longest stretch under pressure, one still going at `end_ns` ending then.
  std::map<uint32_t, PressureStretch> longest_stretches(uint64_t end_ns) const;

 private:
  struct Growing {
    PoolSegmentFact segment;
    PoolUsage before;
    // Each segment's size and its free bytes, before it grew: a request larger than every segment
    // (PyTorch's segments are separate cudaMallocs, never joined) could not fit however few holes.
    std::vector<std::pair<uint64_t, uint64_t>> segment_free;
    std::optional<PoolSnapshot> snapshot;
  };
  bool under_pressure(uint32_t pool, const PoolUsage& u) const;

  const std::map<uint32_t, PoolInfo>& pools_;
  FragmentationOptions options_;
  std::map<uint32_t, Growing> growing_;  // pool -> the growth whose request is awaited
  std::map<uint32_t, PoolMisses> misses_;
  std::map<uint32_t, uint64_t> peak_reserved_;
  std::map<uint32_t, std::pair<uint64_t, uint64_t>> handing_out_;  // pool -> its first and last block's time
  std::map<uint32_t, PressureStretch> open_, longest_;             // pool -> the stretch going on, the longest ended
};

std::vector<report::Finding> fragmentation_findings(const ProcessTrace& trace, const FragmentationObserver& observer,
                                                    const RunBounds& bounds, StackResolver& stacks,
                                                    const FragmentationOptions& options);

// For tests: one replay of an in-memory trace.
std::vector<report::Finding> fragmentation_findings(const ProcessTrace& trace, StackResolver& stacks,
                                                    const FragmentationOptions& options = {});

}  // namespace cuaudit
