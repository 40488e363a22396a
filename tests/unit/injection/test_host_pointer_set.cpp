#include <doctest/doctest.h>

#include <memory>
#include <random>
#include <set>

#include "host_pointer_set.h"

using cuaudit::preload::HostPointerSet;

TEST_CASE("the host pointer set finds what was inserted and forgets what was erased") {
  auto set = std::make_unique<HostPointerSet>();
  CHECK_FALSE(set->contains(0x1000));
  CHECK(set->insert(0x1000));
  CHECK(set->contains(0x1000));
  CHECK_FALSE(set->contains(0x1010));
  set->erase(0x1000);
  CHECK_FALSE(set->contains(0x1000));
  CHECK(set->size() == 0);
}

TEST_CASE("erasing inside collision chains keeps every other pointer findable") {
  auto set = std::make_unique<HostPointerSet>();
  std::mt19937_64 rng(42);
  std::set<uintptr_t> model;
  for (int round = 0; round < 20000; ++round) {
    // Few distinct values in a small range: many collisions and long chains.
    const uintptr_t p = 0x7f0000000000 + (rng() % 3000) * 16;
    if (rng() % 3 == 0 && !model.empty()) {
      auto it = model.lower_bound(p);
      if (it == model.end()) it = model.begin();
      set->erase(*it);
      model.erase(it);
    } else {
      REQUIRE(set->insert(p));
      model.insert(p);
    }
  }
  CHECK(set->size() == model.size());
  for (uintptr_t p : model) CHECK(set->contains(p));
  size_t false_hits = 0;
  for (uintptr_t p = 0x7f0000000000; p < 0x7f0000000000 + 3000 * 16; p += 16)
    false_hits += set->contains(p) && !model.count(p);
  CHECK(false_hits == 0);
}

TEST_CASE("a full set refuses more pointers instead of misbehaving") {
  auto set = std::make_unique<HostPointerSet>();
  size_t inserted = 0;
  for (uintptr_t i = 1; i <= HostPointerSet::kSlots; ++i) inserted += set->insert(i * 4096);
  CHECK(inserted == HostPointerSet::kSlots * 3 / 4);
  CHECK(set->contains(4096));
  set->clear();
  CHECK(set->size() == 0);
  CHECK_FALSE(set->contains(4096));
}

TEST_CASE("rebuilding the filter after many removals keeps every present pointer") {
  auto set = std::make_unique<HostPointerSet>();
  std::vector<uintptr_t> kept;
  for (uintptr_t i = 1; i <= 40000; ++i) {  // well past the rebuild threshold of removals
    const uintptr_t p = 0x7f0000000000 + i * 4096;
    REQUIRE(set->insert(p));
    if (i % 10 == 0) {
      kept.push_back(p);
    } else {
      set->erase(p);
    }
  }
  CHECK(set->size() == kept.size());
  for (uintptr_t p : kept) CHECK(set->contains(p));
  size_t stale = 0;
  for (uintptr_t i = 1; i <= 40000; ++i) stale += i % 10 != 0 && set->contains(0x7f0000000000 + i * 4096);
  CHECK(stale == 0);
}

TEST_CASE("a child forked while another thread was inserting can still look pointers up") {
  auto set = std::make_unique<HostPointerSet>();
  CHECK(set->insert(0x2000));
  // What the child inherits when the fork happened inside insert(): an odd version, a taken flag.
  set->simulate_fork_inside_insert();
  set->reset_after_fork();
  CHECK(set->contains(0x2000));  // returns (before the reset it spun for ever)
  CHECK(set->insert(0x3000));    // and the lock can be taken again
  CHECK(set->contains(0x3000));
}
