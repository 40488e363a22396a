// The flat index in front of the sites' maps (FlatLookup): it finds what the map holds, adds what it
// does not, keeps the map whole for those who iterate it, and survives hashes that collide.
#include <doctest/doctest.h>

#include <cstdint>
#include <unordered_map>

#include "flat_lookup.h"

using namespace cuaudit;

namespace {

// Every key in one of four hashes: long probe sequences, and equal hashes told apart by the key.
struct CollidingHash {
  size_t operator()(uint64_t k) const { return k % 4; }
};

}  // namespace

TEST_CASE("flat lookup: a value per key, made once, kept in the map") {
  std::unordered_map<uint64_t, uint64_t> map;
  FlatLookup<decltype(map)> lookup;
  for (uint64_t k = 0; k < 10'000; ++k) lookup(map, k * 0x5000'0000'0000ull) = k + 1;  // grows many times
  CHECK(map.size() == 10'000);
  for (uint64_t k = 0; k < 10'000; ++k) {
    REQUIRE(lookup(map, k * 0x5000'0000'0000ull) == k + 1);
    CHECK(map.at(k * 0x5000'0000'0000ull) == k + 1);
  }
  CHECK(map.size() == 10'000);  // lookups of known keys add nothing
  CHECK(lookup(map, 7) == 0);   // a new key: value-initialized, as map[key]
  CHECK(map.size() == 10'001);
}

TEST_CASE("flat lookup: references stay valid while the index grows") {
  std::unordered_map<uint64_t, uint64_t> map;
  FlatLookup<decltype(map)> lookup;
  uint64_t& first = lookup(map, 1);
  first = 42;
  for (uint64_t k = 2; k < 5'000; ++k) lookup(map, k);
  CHECK(&lookup(map, 1) == &first);
  CHECK(first == 42);
}

TEST_CASE("flat lookup: entries the map had before the index are found, not made again") {
  std::unordered_map<uint64_t, uint64_t> map{{10, 1}, {20, 2}, {30, 3}};
  FlatLookup<decltype(map)> lookup;
  CHECK(lookup(map, 20) == 2);
  lookup(map, 40) = 4;
  map.emplace(50, 5);  // behind the index's back: found all the same
  CHECK(lookup(map, 50) == 5);
  CHECK(lookup(map, 10) == 1);
  CHECK(map.size() == 5);
}

TEST_CASE("flat lookup: colliding hashes and prefetches change no answer") {
  std::unordered_map<uint64_t, uint64_t, CollidingHash> map;
  FlatLookup<decltype(map)> lookup;
  lookup.prefetch(map, 3, false);  // before anything is indexed: nothing to load, nothing breaks
  for (uint64_t k = 0; k < 2'000; ++k) {
    lookup.prefetch(map, k, false);
    lookup.prefetch(map, k, true);
    lookup(map, k) = k * 3;
  }
  for (uint64_t k = 0; k < 2'000; ++k) {
    lookup.prefetch(map, k, true);
    REQUIRE(lookup(map, k) == k * 3);
  }
  CHECK(map.size() == 2'000);
}
