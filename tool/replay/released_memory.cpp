#include "released_memory.h"

#include <algorithm>
#include <vector>

namespace cuaudit {

void ReleasedRanges::add(uint64_t key, const ReleasedMemory& released) {
  by_address_.insert_or_assign(key, released);
  if (by_address_.size() <= capacity_) return;  // the common case: nothing more to do
  // Over the capacity: the older half goes, at once. One pass a half-capacity of releases keeps
  // every release's cost constant, and a program whose addresses come back never gets here.
  std::vector<uint64_t> seqs;
  seqs.reserve(by_address_.size());
  for (const auto& [address, r] : by_address_) seqs.push_back(r.release.seq);
  auto middle = seqs.begin() + static_cast<std::ptrdiff_t>(seqs.size() / 2);
  std::nth_element(seqs.begin(), middle, seqs.end());
  const uint64_t oldest_kept = *middle;
  for (auto it = by_address_.begin(); it != by_address_.end();) {
    if (it->second.release.seq < oldest_kept) {
      it = by_address_.erase(it);
      ++forgotten_;
    } else {
      ++it;
    }
  }
}

void ReleasedRanges::erase_range(uint64_t begin, uint64_t end) {
  // One descent when nothing was released there: the common case.
  auto first = by_address_.lower_bound(begin);
  if (first != by_address_.end() && first->first < end) by_address_.erase(first, by_address_.lower_bound(end));
}

const ReleasedMemory* ReleasedRanges::at(uint64_t key) const {
  auto it = by_address_.find(key);
  return it == by_address_.end() ? nullptr : &it->second;
}

}  // namespace cuaudit
