#include "pool_heaps.h"

#include <algorithm>

namespace cuaudit {

void PoolHeaps::apply(const MemoryEvent& e) {
  switch (api_info(e.api).op) {
    case BlockOp::HandOut:
      return hand_out(e);
    case BlockOp::Resize:
      return resize(e);
    case BlockOp::TakeBack:
      return take_back(e);
    case BlockOp::ReleaseAll:
    case BlockOp::Reset:
      return release_pool(e);
    case BlockOp::None:
      return;
  }
}

void PoolHeaps::account(const MemoryEvent& block, bool coming) {
  changed_.insert(block.pool);
  uint64_t& used = used_[block.pool];
  used = coming ? used + block.bytes : used - block.bytes;
  if (!pools_) return;
  auto it = pools_->find(block.pool);
  if (it == pools_->end() || source_info(it->second.kind).kind != SourceKind::FrameworkPool) return;
  uint64_t& bytes = framework_bytes_[block.device];
  bytes = coming ? bytes + block.bytes : bytes - block.bytes;
}

void PoolHeaps::hand_out(const MemoryEvent& e) {
  if (e.key == 0) return;
  ++result_.allocations;
  // The address is handed out again: what was taken back there before is history, not a double return.
  released_.erase_range(e.key, memory_range_end(e));
  // A block still live at the same address means its return went unseen; the new one replaces it.
  if (auto old = live_.find(e.key); old != live_.end()) {
    account(old->second, false);
    if (observer_) observer_->on_gone(old->second);
  }
  live_[e.key] = e;
  account(e, true);
  if (observer_) observer_->on_live(e);
}

// nvtxMemRegionsResize: the block keeps its pool, its stacks and its place; only its size changes.
void PoolHeaps::resize(const MemoryEvent& e) {
  auto it = live_.find(e.key);
  if (it == live_.end()) {
    result_.release_findings.push_back({ReleaseProblem::Invalid, e, {}, {}, 0});
    return;
  }
  MemoryEvent& block = it->second;
  if (observer_) observer_->on_gone(block);
  account(block, false);
  block.bytes = e.bytes;
  account(block, true);
  if (observer_) observer_->on_live(block);
}

void PoolHeaps::gone(Blocks::iterator it, const MemoryEvent& release, bool by_program) {
  const MemoryEvent& block = it->second;
  if (by_program) {
    ++result_.releases;
    if (observer_) observer_->on_released(block, release);
  }
  if (observer_) observer_->on_gone(block);
  account(block, false);
  released_.add(it->first, {block, release});
  live_.erase(it);
}

void PoolHeaps::take_back(const MemoryEvent& e) {
  if (e.key == 0) return;
  if (auto it = live_.find(e.key); it != live_.end()) return gone(it, e, true);
  // A pool's return reports no result: every block it handed out was recorded, so one it never
  // handed out is the program's mistake.
  if (const MemoryEvent* inside = containing(e.key)) {
    result_.release_findings.push_back({ReleaseProblem::Invalid, e, *inside, {}, e.key - inside->key});
    return;
  }
  if (const ReleasedMemory* before = released_.at(e.key)) {
    result_.release_findings.push_back({ReleaseProblem::Double, e, before->allocation, before->release, 0});
    return;
  }
  result_.release_findings.push_back({ReleaseProblem::Invalid, e, {}, {}, 0});
}

// nvtxMemHeapUnregister / nvtxMemHeapReset: the pool's blocks still handed out end with it, never
// returned by the program.
void PoolHeaps::release_pool(const MemoryEvent& e) {
  for (auto it = live_.begin(); it != live_.end();) {
    if (it->second.pool != e.pool) {
      ++it;
      continue;
    }
    result_.leaks.push_back(leaked(it->second, LeakEnd::PoolReleased));
    gone(it++, e, false);
  }
}

void PoolHeaps::segment(const PoolSegmentFact& s) {
  if (s.mapped && observer_) observer_->on_pool_growing(s, usage(s.pool), *this);
  changed_.insert(s.pool);
  auto& segments = segments_[s.pool];
  if (s.mapped) {
    segments[s.base] = {s.bytes, s.device};
  } else {
    segments.erase(s.base);
  }
}

void PoolHeaps::cuda_released(uint64_t key) {
  for (auto& [pool, segments] : segments_) {
    if (segments.erase(key)) changed_.insert(pool);
  }
}

void PoolHeaps::figures(const PoolFiguresFact& f) {
  figures_[f.pool][f.device] = f;
  changed_.insert(f.pool);
}

void PoolHeaps::take_changed(const std::function<void(uint32_t pool, const PoolUsage&)>& visit) {
  for (uint32_t pool : changed_) visit(pool, usage(pool));
  changed_.clear();
}

const MemoryEvent* PoolHeaps::containing(uint64_t address) const { return live_containing(live_, address); }

const ReleasedMemory* PoolHeaps::released_containing(uint64_t address) const { return released_.containing(address); }

std::optional<uint32_t> PoolHeaps::segment_at(uint64_t base) const {
  for (const auto& [pool, segments] : segments_) {
    if (segments.count(base)) return pool;
  }
  return std::nullopt;
}

PoolUsage PoolHeaps::usage(uint32_t pool) const {
  PoolUsage u;
  if (auto it = used_.find(pool); it != used_.end()) u.used = it->second;
  for (const auto& [key, block] : live_) u.blocks += block.pool == pool;
  if (auto said = figures_.find(pool); said != figures_.end()) {  // a pool's own figures, one a device
    for (const auto& [device, f] : said->second) {
      u.reserved += f.reserved;
      u.free += f.reserved - std::min(f.reserved, f.used);
      u.largest_free = std::max(u.largest_free, f.largest_free);
    }
    u.used = u.reserved - u.free;
    return u;
  }
  auto segments = segments_.find(pool);
  if (segments == segments_.end()) return u;
  for (const auto& [base, segment] : segments->second) {
    const uint64_t end = segment.bytes > UINT64_MAX - base ? UINT64_MAX : base + segment.bytes;
    ++u.segments;
    u.reserved += segment.bytes;
    // The gaps between the blocks inside [base, end): a block that starts before the segment and
    // reaches into it covers its start.
    uint64_t covered_to = base;
    auto it = live_.lower_bound(base);
    if (it != live_.begin()) {
      const auto before = std::prev(it);
      covered_to = std::max(covered_to, std::min(end, memory_range_end(before->second)));
    }
    for (; it != live_.end() && it->first < end; ++it) {
      if (it->first > covered_to) {
        const uint64_t gap = it->first - covered_to;
        u.free += gap;
        u.largest_free = std::max(u.largest_free, gap);
        if (gap < kRoundingGap) u.rounding_slack += gap;
      }
      covered_to = std::max(covered_to, std::min(end, memory_range_end(it->second)));
    }
    if (end > covered_to) {
      u.free += end - covered_to;
      u.largest_free = std::max(u.largest_free, end - covered_to);
    }
  }
  return u;
}

void PoolHeaps::for_each_block(uint32_t pool, const std::function<void(const MemoryEvent&)>& visit) const {
  for (const auto& [key, block] : live_) {
    if (block.pool == pool) visit(block);
  }
}

std::vector<SegmentLayout> PoolHeaps::layout(uint32_t pool) const {
  std::vector<SegmentLayout> out;
  const auto segments = segments_.find(pool);
  if (segments == segments_.end()) return out;
  for (const auto& [base, segment] : segments->second) {
    SegmentLayout& l = out.emplace_back();
    l.base = base, l.bytes = segment.bytes;
    const uint64_t end = segment.bytes > UINT64_MAX - base ? UINT64_MAX : base + segment.bytes;
    for (auto it = live_.lower_bound(base); it != live_.end() && it->first < end; ++it) {
      if (it->second.pool == pool) l.blocks.push_back(&it->second);
    }
  }
  return out;
}

std::vector<uint32_t> PoolHeaps::pools_on(int32_t device) const {
  std::vector<uint32_t> out;
  for (const auto& [pool, segments] : segments_) {
    for (const auto& [base, segment] : segments) {
      if (segment.device == device) {
        out.push_back(pool);
        break;
      }
    }
  }
  return out;
}

std::vector<uint32_t> PoolHeaps::pools() const {
  std::vector<uint32_t> out;
  for (const auto& [pool, bytes] : used_) out.push_back(pool);
  for (const auto& [pool, segments] : segments_) out.push_back(pool);
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

void PoolHeaps::finish(LeakEnd end) {
  result_.leaks.reserve(result_.leaks.size() + live_.size());
  while (!live_.empty()) {
    auto node = live_.extract(live_.begin());
    result_.leaks.push_back(leaked(node.mapped(), end));
  }
}

}  // namespace cuaudit
