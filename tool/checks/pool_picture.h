// A picture of one pool at one moment, for the segment view of a fragmentation finding: each
// segment's blocks in address order, by allocation site, so that a reader sees which long-lived
// blocks sit between the holes (pin them). Taken in the replay (PoolsView) at a pool's worst
// moment, and only then: a pool's blocks are walked once a picture.
#pragma once

#include <cstdint>
#include <vector>

#include "pool_view.h"
#include "report_model.h"
#include "stack_resolver.h"

namespace cuaudit {

inline constexpr size_t kPictureSites = 8;      // sites a picture colors; the rest are "other sites"
inline constexpr size_t kPictureSegments = 64;  // the pool's biggest segments
inline constexpr size_t kPictureSpans = 512;    // spans a segment keeps

// The live blocks of one allocation site (stack, Python stack, API) in a picture.
struct PinningSite {
  uint64_t stack_id = 0, python_stack_id = 0;
  Api api = Api::Count;
  uint64_t bytes = 0, count = 0;
};

struct PoolSnapshot {
  struct Span {
    uint64_t offset = 0, bytes = 0;
    int site = -1;  // into `sites`; -1: the other sites
  };
  struct Segment {
    uint64_t bytes = 0;
    std::vector<Span> spans;
  };
  std::vector<PinningSite> sites;  // biggest first, up to kPictureSites
  std::vector<Segment> segments;   // in address order
  bool truncated = false;
};

PoolSnapshot snapshot_pool(const PoolsView& pools, uint32_t pool);

// What a report shows of a block's site: its Python line when it has one, else its native stack.
std::vector<report::Frame> block_stack(const ProcessTrace& trace, uint64_t stack_id, uint64_t python_stack_id,
                                       StackResolver& stacks);

// The frame of `block` (a block's stack) to show its site at: the first outside the pool's own
// code, whose files are those of the frames of `made` (the pool's creation) inside the first
// function both stacks share (their common caller), the caller's file excepted.
const report::Frame* site_frame(const std::vector<report::Frame>& made, const std::vector<report::Frame>& block);

// Each site is shown at its first frame outside the pool's own code (a hand-written pool's alloc
// and its NVTX calls), found from the stack that made pool `pool`.
report::PoolPicture pool_picture(const ProcessTrace& trace, uint32_t pool, const PoolSnapshot& snapshot,
                                 StackResolver& stacks);

}  // namespace cuaudit
