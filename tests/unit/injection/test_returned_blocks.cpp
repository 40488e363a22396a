// The launch checks' memory of blocks a pool took back (returned_blocks.h): every block that
// overlaps memory handed out again is forgotten, wherever the two lie against the 64 KiB regions
// the blocks are kept by, and a pointer is found in any block still remembered.
#include <doctest/doctest.h>

#include "returned_blocks.h"

using cuaudit::inject::ReturnedBlocks;

namespace {
constexpr uint64_t kRegion = uint64_t{1} << ReturnedBlocks::kRegionShift;
constexpr uint64_t kBase = 0x7f0000000000;
}  // namespace

TEST_CASE("a returned block is found until its memory is handed out again, in part or whole") {
  ReturnedBlocks blocks;
  blocks.add(kBase + 0x100, kBase + 0x200);
  CHECK(blocks.contains(kBase + 0x100));
  CHECK(blocks.contains(kBase + 0x1ff));
  CHECK_FALSE(blocks.contains(kBase + 0x200));
  CHECK_FALSE(blocks.contains(kBase + 0xff));
  blocks.forget(kBase + 0x180, kBase + 0x1c0);  // a part of it: the whole block is forgotten
  CHECK_FALSE(blocks.contains(kBase + 0x100));

  // Handed out again as a larger block that starts before it and ends after it.
  blocks.add(kBase + 0x1000, kBase + 0x1100);
  blocks.forget(kBase + 0x800, kBase + 0x2000);
  CHECK_FALSE(blocks.contains(kBase + 0x1000));

  // Memory that touches no returned block forgets nothing.
  blocks.add(kBase + 0x3000, kBase + 0x3100);
  blocks.forget(kBase + 0x3100, kBase + 0x3200);
  blocks.forget(kBase + 0x2f00, kBase + 0x3000);
  CHECK(blocks.contains(kBase + 0x3000));
}

TEST_CASE("blocks across a region's border, and memory handed out across many regions") {
  ReturnedBlocks blocks;
  // A block across the border of two regions, found from either side.
  blocks.add(kBase + kRegion - 0x80, kBase + kRegion + 0x80);
  CHECK(blocks.contains(kBase + kRegion - 1));
  CHECK(blocks.contains(kBase + kRegion));
  // Memory handed out inside the second region forgets it.
  blocks.forget(kBase + kRegion + 0x40, kBase + kRegion + 0x60);
  CHECK_FALSE(blocks.contains(kBase + kRegion));

  // Memory handed out across three regions forgets a block in the last of them.
  blocks.add(kBase + 2 * kRegion + 0x100, kBase + 2 * kRegion + 0x200);
  blocks.forget(kBase + kRegion - 0x10, kBase + 2 * kRegion + 0x180);
  CHECK_FALSE(blocks.contains(kBase + 2 * kRegion + 0x100));

  // Small blocks in 40 regions (more regions than rings), then one hand-out over all of them.
  for (uint64_t r = 0; r < 40; ++r) blocks.add(kBase + r * kRegion + 0x100, kBase + r * kRegion + 0x200);
  CHECK(blocks.contains(kBase + 39 * kRegion + 0x100));
  CHECK(blocks.contains(kBase + 0x100));
  blocks.forget(kBase + 0x180, kBase + 39 * kRegion + 0x180);
  for (uint64_t r = 0; r < 40; ++r) {
    CAPTURE(r);
    CHECK_FALSE(blocks.contains(kBase + r * kRegion + 0x100));
  }
  // Regions that share a ring keep their blocks apart: forgetting one region's block keeps the other's.
  blocks.add(kBase + 0x100, kBase + 0x200);
  blocks.add(kBase + ReturnedBlocks::kRegionRings * kRegion + 0x100,
             kBase + ReturnedBlocks::kRegionRings * kRegion + 0x200);
  blocks.forget(kBase + 0x100, kBase + 0x200);
  CHECK_FALSE(blocks.contains(kBase + 0x100));
  CHECK(blocks.contains(kBase + ReturnedBlocks::kRegionRings * kRegion + 0x100));
}

TEST_CASE("the latest blocks of a region are remembered, the oldest forgotten first") {
  ReturnedBlocks blocks;
  const uint64_t n = ReturnedBlocks::kPerRegionRing + 4;
  for (uint64_t i = 0; i < n; ++i) blocks.add(kBase + i * 0x100, kBase + i * 0x100 + 0x80);
  for (uint64_t i = 0; i < n; ++i) {
    CAPTURE(i);
    CHECK(blocks.contains(kBase + i * 0x100) == (i >= 4));
  }
}
