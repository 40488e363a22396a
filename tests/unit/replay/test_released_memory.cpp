#include <doctest/doctest.h>

#include "released_memory.h"

using namespace cuaudit;

namespace {

ReleasedMemory released(uint64_t key, uint64_t bytes, uint64_t release_seq) {
  ReleasedMemory r;
  r.allocation.key = key;
  r.allocation.bytes = bytes;
  r.allocation.seq = release_seq - 1;
  r.release.key = key;
  r.release.seq = release_seq;
  return r;
}

}  // namespace

TEST_CASE("a week of releases at fresh addresses keeps the most recent ones, and says how many it forgot") {
  // A service that frees an allocation a second at addresses never handed out again, for a week
  // (604,800 releases), against a capacity scaled down to 1,000.
  constexpr uint64_t kWeek = 7 * 24 * 3600;
  ReleasedRanges ranges(1000);
  uint64_t seq = 1;
  for (uint64_t i = 0; i < kWeek; ++i) ranges.add(0x100000 + i * 4096, released(0x100000 + i * 4096, 4096, seq += 2));
  CHECK(ranges.size() <= 1000);
  CHECK(ranges.size() >= 500);  // at least the most recent half-capacity
  CHECK(ranges.forgotten() == kWeek - ranges.size());
  const uint64_t last = 0x100000 + (kWeek - 1) * 4096;
  REQUIRE(ranges.at(last));
  CHECK(ranges.containing(last + 100) == ranges.at(last));
  CHECK(ranges.at(0x100000) == nullptr);  // the oldest, forgotten
}

TEST_CASE("memory allocated again is history and never counts against the capacity") {
  ReleasedRanges ranges(4);
  uint64_t seq = 1;
  // One address freed and allocated again a million times: never more than one entry, nothing forgotten.
  for (int i = 0; i < 1000000; ++i) {
    ranges.add(0x7000, released(0x7000, 256, seq += 2));
    ranges.erase_range(0x7000, 0x7100);
  }
  CHECK(ranges.size() == 0);
  CHECK(ranges.forgotten() == 0);
  // Released again at the same address: the newer release is the one kept.
  ranges.add(0x7000, released(0x7000, 256, 10));
  ranges.add(0x7000, released(0x7000, 256, 20));
  for (uint64_t k = 1; k <= 3; ++k) ranges.add(0x9000 * k, released(0x9000 * k, 16, 20 + k));
  CHECK(ranges.size() == 4);
  CHECK(ranges.forgotten() == 0);
  REQUIRE(ranges.at(0x7000));
  CHECK(ranges.at(0x7000)->release.seq == 20);
  // The fifth: over the capacity, the older half (releases 20 and 21) goes.
  ranges.add(0x20000, released(0x20000, 16, 30));
  CHECK(ranges.at(0x7000) == nullptr);
  CHECK(ranges.at(0x9000) == nullptr);
  CHECK(ranges.at(0x12000) != nullptr);
  CHECK(ranges.size() == 3);
  CHECK(ranges.forgotten() == 2);
}

TEST_CASE("a range allocated again clears every release inside it, and only those") {
  ReleasedRanges ranges;
  ranges.add(0x1000, released(0x1000, 0x100, 3));
  ranges.add(0x1100, released(0x1100, 0x100, 5));
  ranges.add(0x1200, released(0x1200, 0x100, 7));
  ranges.erase_range(0x1000, 0x1200);
  CHECK(ranges.at(0x1000) == nullptr);
  CHECK(ranges.at(0x1100) == nullptr);
  CHECK(ranges.at(0x1200) != nullptr);
  CHECK(ranges.containing(0x12ff) == ranges.at(0x1200));
  CHECK(ranges.containing(0x1300) == nullptr);
}
