#include "memory_ranges.h"

#include <algorithm>

namespace cuaudit {

uint64_t memory_range_end(const MemoryEvent& e) {
  const uint64_t bytes = e.bytes ? e.bytes : 1;
  return bytes > UINT64_MAX - e.key ? UINT64_MAX : e.key + bytes;
}

const MemoryEvent* live_containing(const std::map<uint64_t, MemoryEvent>& live, uint64_t address) {
  auto it = live.upper_bound(address);
  if (it == live.begin()) return nullptr;
  --it;
  return address - it->first < it->second.bytes ? &it->second : nullptr;  // no wrap-around
}

const ReleasedMemory* released_containing(const std::map<uint64_t, ReleasedMemory>& released, uint64_t address) {
  auto it = released.upper_bound(address);
  if (it == released.begin()) return nullptr;
  --it;
  return address - it->first < std::max<uint64_t>(it->second.allocation.bytes, 1) ? &it->second : nullptr;
}

}  // namespace cuaudit
