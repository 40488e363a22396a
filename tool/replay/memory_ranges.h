// Ranges of memory in the replay's maps (by address): where one ends, which live or released
// allocation contains an address. Shared by CUDA's allocation table and the pools' heaps.
#pragma once

#include <cstdint>
#include <map>

#include "trace_model.h"

namespace cuaudit {

// Memory that was live and was released: the allocation and the release that ended it.
struct ReleasedMemory {
  MemoryEvent allocation;
  MemoryEvent release;
};

// One past the last address of [key, key + bytes) (at least one byte), saturated: a damaged or
// hostile trace can name a range that wraps around, which must not turn a range into its reverse
// (found by fuzzing: std::map::erase(first, last) with last before first).
uint64_t memory_range_end(const MemoryEvent& e);

// The live allocation of `live` (by address) that contains `address`, or nullptr; no wrap-around.
const MemoryEvent* live_containing(const std::map<uint64_t, MemoryEvent>& live, uint64_t address);
// The released allocation of `released` that contains `address` (a zero-byte one its first byte).
const ReleasedMemory* released_containing(const std::map<uint64_t, ReleasedMemory>& released, uint64_t address);

}  // namespace cuaudit
