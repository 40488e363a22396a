// A faster way into an unordered_map whose entries are never erased, for the observers that look a
// site up at every allocation and release of a run (site_history.h, churn_findings.h).
//
// std::unordered_map reaches an entry through its bucket array and the node before it in the
// bucket's list: two or three dependent cache misses before the entry itself, which at 100,000
// sites was a fifth of a 10,000,000-event report (docs/PERFORMANCE.md, "The report at scale"). This
// index is one flat array of (hash, entry) pairs, open addressing with linear probing: a lookup is
// one probe into the array, then the entry it needed anyway. The map keeps the entries (its nodes
// never move), so references into it stay valid and whoever iterates the map sees what it did.
//
// Insert-only by design: the map must never have an entry erased while the index is in use
// (the owners keep every site to the end of the replay).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace cuaudit {

template <class Map>
class FlatLookup {
 public:
  using Key = typename Map::key_type;
  using Value = typename Map::mapped_type;

  // The value at `key` in `map`, value-initialized there if new (as map[key]).
  Value& operator()(Map& map, const Key& key) {
    if ((map.size() + 1) * 2 > slots_.size()) rebuild(map);  // at most half full: short probes
    const uint64_t hash = mixed(map.hash_function()(key));
    const size_t mask = slots_.size() - 1;
    for (size_t i = hash & mask;; i = (i + 1) & mask) {
      Slot& slot = slots_[i];
      if (!slot.entry) {
        slot = {hash, &*map.try_emplace(key).first};
        return slot.entry->second;
      }
      if (slot.hash == hash && slot.entry->first == key) return slot.entry->second;
    }
  }

  // Starts loading what a lookup of `key` a few events later will read: first (`near` false) the
  // slot, then (`near` true, once the slot had time to arrive) the entry the slot points to. The
  // misses of several events then overlap instead of following one another. A prefetch never
  // changes anything, and one that guessed wrong (a collision, a key not there yet) costs nothing.
  void prefetch(const Map& map, const Key& key, bool near) const {
    if (slots_.empty()) return;
    const Slot& slot = slots_[mixed(map.hash_function()(key)) & (slots_.size() - 1)];
    if (!near) return load_soon(&slot);
    if (!slot.entry) return;
    load_soon(slot.entry);
    load_soon(reinterpret_cast<const char*>(slot.entry) + 64);  // an entry of two lines
  }

 private:
  struct Slot {
    uint64_t hash = 0;
    typename Map::value_type* entry = nullptr;
  };

  // GCC 12 drops a __builtin_prefetch behind a branch as dead code (its DCE sees no effect), which
  // left these lookups prefetching nothing; an asm statement it must keep.
  static void load_soon(const void* p) {
#if defined(__x86_64__)
    asm volatile("prefetcht0 %0" : : "m"(*static_cast<const char*>(p)));
#else
    __builtin_prefetch(p);
#endif
  }

  // The map's own hash may keep its entropy in high bits (std::hash of an integer is the integer):
  // murmur3's finalizer spreads it over the low bits the mask takes.
  static uint64_t mixed(uint64_t h) {
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdull;
    h ^= h >> 33;
    h *= 0xc4ceb9fe1a85ec53ull;
    return h ^ (h >> 33);
  }

  // Room for twice the map's entries, all of them indexed again (also any the map had before the
  // index, or was given behind its back).
  void rebuild(Map& map) {
    size_t size = 16;
    while (size < (map.size() + 1) * 4) size *= 2;
    slots_.assign(size, Slot{});
    const size_t mask = size - 1;
    for (auto& entry : map) {
      const uint64_t hash = mixed(map.hash_function()(entry.first));
      size_t i = hash & mask;
      while (slots_[i].entry) i = (i + 1) & mask;
      slots_[i] = {hash, &entry};
    }
  }

  std::vector<Slot> slots_;  // every entry of the map but those made behind the index's back
};

}  // namespace cuaudit
