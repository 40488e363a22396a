// What was released and not allocated again, by address: the allocation and the release that ended
// it, for double and invalid frees and for launch arguments into freed memory ("freed at").
//
// Bounded, as AddressSanitizer's quarantine is: when more than kDefaultCapacity releases are held,
// the older half is forgotten, so at least the most recent half-capacity are always kept. A
// program that keeps releasing memory at addresses never allocated again (a long service's churn
// through fresh addresses) would otherwise grow the replay's memory with time, not with what is
// live. A second release of forgotten memory is then an invalid release rather than a double one;
// forgotten() counts them so the report can say so.
#pragma once

#include <cstdint>
#include <map>

#include "memory_ranges.h"

namespace cuaudit {

class ReleasedRanges {
 public:
  static constexpr size_t kDefaultCapacity = 262144;  // about 64 MB of the replay's memory
  explicit ReleasedRanges(size_t capacity = kDefaultCapacity) : capacity_(capacity ? capacity : 1) {}

  // Memory at `key` was released; past the capacity, the older half of what is held is forgotten.
  void add(uint64_t key, const ReleasedMemory& released);
  // [begin, end) is allocated again: what was released there is history.
  void erase_range(uint64_t begin, uint64_t end);
  // The release of the memory at exactly `key`, or nullptr.
  const ReleasedMemory* at(uint64_t key) const;
  // The released memory containing `address` (a zero-byte allocation its first byte), or nullptr.
  const ReleasedMemory* containing(uint64_t address) const { return released_containing(by_address_, address); }

  size_t size() const { return by_address_.size(); }
  uint64_t forgotten() const { return forgotten_; }

 private:
  size_t capacity_;
  std::map<uint64_t, ReleasedMemory> by_address_;
  uint64_t forgotten_ = 0;
};

}  // namespace cuaudit
