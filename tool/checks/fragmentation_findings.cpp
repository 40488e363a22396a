#include "fragmentation_findings.h"

#include <algorithm>

#include <fmt/format.h>

#include "ownership.h"
#include "pool_names.h"

namespace cuaudit {
namespace {

constexpr size_t kRelatedSites = 3;
constexpr size_t kRequestSizes = 8;

// A stretch outlasts what `kept` holds for its pool (or it holds none).
bool longer(const PressureStretch& a, const std::map<uint32_t, PressureStretch>& kept, uint32_t pool) {
  const auto b = kept.find(pool);
  return b == kept.end() || a.ns() > b->second.ns();
}

}  // namespace

bool FragmentationObserver::under_pressure(uint32_t pool, const PoolUsage& u) const {
  const auto info = pools_.find(pool);
  if (info == pools_.end() || info->second.kind != MemorySource::NvtxHeap) return false;  // it can grow
  return u.hole_bytes() && u.used * 2 >= u.reserved && u.hole_fragmentation() * 100 >= options_.threshold_percent;
}

void FragmentationObserver::on_pool_growing(const PoolSegmentFact& segment, const PoolUsage& before,
                                            const PoolsView& pools) {
  uint64_t& peak = peak_reserved_[segment.pool];
  peak = std::max(peak, before.reserved + segment.bytes);
  // Only a pool with holes to miss in: a full pool that grows is simply full.
  if (!before.hole_bytes()) {
    growing_.erase(segment.pool);
    return;
  }
  Growing& g = growing_[segment.pool];
  g.segment = segment;
  g.before = before;
  g.segment_free.clear();
  for (const SegmentLayout& s : pools.layout(segment.pool)) {
    uint64_t used = 0;
    for (const MemoryEvent* b : s.blocks) used += b->bytes;
    g.segment_free.emplace_back(s.bytes, s.bytes > used ? s.bytes - used : 0);
  }
  g.snapshot.reset();
  // The pool is pictured only when this could become its worst moment.
  const auto known = misses_.find(segment.pool);
  if (known == misses_.end() || before.hole_fragmentation() > known->second.worst.before.hole_fragmentation())
    g.snapshot = snapshot_pool(pools, segment.pool);
}

void FragmentationObserver::on_live(const MemoryEvent& block) {
  if (!is_block_op(block.api)) return;
  const auto span = handing_out_.try_emplace(block.pool, block.time_ns, block.time_ns).first;
  span->second.second = block.time_ns;
  if (growing_.empty()) return;
  const auto it = growing_.find(block.pool);
  if (it == growing_.end()) return;
  Growing g = std::move(it->second);
  growing_.erase(it);
  // The request the growth was for lands in the new segment; one that fit elsewhere was not it.
  const bool in_new_segment = block.key >= g.segment.base && block.key - g.segment.base < g.segment.bytes;
  if (!in_new_segment || block.bytes == 0) return;
  // Enough was free in holes, and no hole was big enough: that is a miss.
  if (g.before.hole_bytes() < block.bytes || g.before.largest_free >= block.bytes) return;
  if (static_cast<double>(g.before.hole_bytes()) < options_.min_hole_share * static_cast<double>(g.before.reserved))
    return;
  // Holes that could have served it are those in segments at least as large as the request: free
  // bytes in smaller segments would not have held it even unfragmented.
  uint64_t room = 0;
  for (const auto& [bytes, free] : g.segment_free) room += bytes >= block.bytes ? free : 0;
  if (room < block.bytes) return;
  PoolMisses& m = misses_[block.pool];
  if (!m.count) m.first_ns = block.time_ns;
  m.last_ns = block.time_ns;
  ++m.count;
  ++m.sizes[block.bytes];
  m.grown += g.segment.bytes;
  if (g.snapshot && (m.count == 1 || g.before.hole_fragmentation() > m.worst.before.hole_fragmentation())) {
    m.worst = PoolMiss{block, g.before, g.segment.bytes};
    m.snapshot = std::move(*g.snapshot);
  }
}

void FragmentationObserver::on_pool_sample(const MemorySample& s, uint32_t pool, const PoolUsage& usage,
                                           const PoolsView& pools) {
  uint64_t& peak = peak_reserved_[pool];
  peak = std::max(peak, usage.reserved);
  const auto open = open_.find(pool);
  if (!under_pressure(pool, usage)) {
    if (open == open_.end()) return;
    open->second.to_ns = s.time_ns;
    if (longer(open->second, longest_, pool)) longest_[pool] = std::move(open->second);
    open_.erase(open);
    return;
  }
  // A stretch begins, or it gets worse: the pool is pictured then.
  if (open == open_.end()) {
    open_[pool] = {s.time_ns, s.time_ns, s.time_ns, usage, snapshot_pool(pools, pool)};
  } else if (usage.hole_fragmentation() > open->second.worst.hole_fragmentation()) {
    open->second.worst_ns = s.time_ns, open->second.worst = usage;
    open->second.snapshot = snapshot_pool(pools, pool);
  }
}

std::map<uint32_t, PressureStretch> FragmentationObserver::longest_stretches(uint64_t end_ns) const {
  std::map<uint32_t, PressureStretch> out = longest_;
  for (const auto& [pool, stretch] : open_) {
    PressureStretch ended = stretch;
    ended.to_ns = std::max(end_ns, stretch.from_ns);
    if (longer(ended, out, pool)) out[pool] = std::move(ended);
  }
  return out;
}

namespace {

// What both kinds of finding share: the pool's figures at the worst moment, its picture, the
// sites that pinned the holes and where the pool was made.
report::Finding pool_finding(const ProcessTrace& trace, uint32_t pool, const PoolUsage& worst, uint64_t worst_ns,
                             const PoolSnapshot& snapshot, StackResolver& stacks) {
  report::Finding f;
  f.kind = report::FindingKind::Fragmentation;
  f.severity = report::Severity::Warning;
  f.pid = trace.pid;
  if (const auto info = trace.pools.find(pool); info != trace.pools.end() && info->second.device >= 0)
    f.device = info->second.device;
  f.at = trace.seconds_since_start(worst_ns);
  report::FragmentationStats s;
  s.pool = pool_description(trace.pools, pool);
  s.at = *f.at;
  s.reserved = worst.reserved, s.used = worst.used;
  s.free = worst.hole_bytes(), s.largest_free = worst.largest_free;
  s.ratio = worst.hole_fragmentation();
  s.picture = pool_picture(trace, pool, snapshot, stacks);
  for (size_t i = 0; i < snapshot.sites.size() && i < kRelatedSites; ++i) {
    const PinningSite& p = snapshot.sites[i];
    const std::string holder(api_info(stacks.api_called(p.stack_id, p.api)).name);
    f.related.push_back({report::RelatedRole::Holder, holder,
                         fmt::format("{} in {} live block(s) sat between the holes then, handed out at:",
                                     report::human_bytes(p.bytes), p.count),
                         block_stack(trace, p.stack_id, p.python_stack_id, stacks)});
  }
  f.message =
      fmt::format("{} is cut into holes: {} of its {} were free, the largest hole {}", s.pool,
                  report::human_bytes(s.free), report::human_bytes(s.reserved), report::human_bytes(s.largest_free));
  f.fragmentation = std::move(s);
  return f;
}

void add_advice(report::Finding& f) {
  f.notes.push_back(
      "keep block sizes uniform (round requests up to a few size classes), give long-lived blocks a pool of their "
      "own so they do not pin holes among short-lived ones, or use stream-ordered allocation (cudaMallocAsync); "
      "for PyTorch, PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True");
}

report::Finding miss_finding(const ProcessTrace& trace, uint32_t pool, const FragmentationObserver::PoolMisses& m,
                             StackResolver& stacks) {
  const PoolMiss& w = m.worst;
  report::Finding f = pool_finding(trace, pool, w.before, w.request.time_ns, m.snapshot, stacks);
  report::FragmentationStats& s = *f.fragmentation;
  f.api = std::string(api_info(stacks.api_called(w.request.stack_id, w.request.api)).name);
  f.bytes = w.request.bytes;
  f.count = m.count;
  if (w.request.device >= 0) f.device = w.request.device;
  s.requested = w.request.bytes;
  s.grew_by = w.grew_by;
  s.misses = m.count;
  for (auto it = m.sizes.rbegin(); it != m.sizes.rend() && s.request_sizes.size() < kRequestSizes; ++it)
    s.request_sizes.push_back(it->first);
  f.headline = fmt::format(
      "Fragmentation of {}: {} request(s) did not fit in its free memory although enough was free; at the worst "
      "({:.3f} s) {} was asked with {} free in {} segment(s) but no hole larger than {} (fragmentation {:.0f}%), "
      "and the pool took {} more instead; asked by {} at:",
      s.pool, m.count, s.at, report::human_bytes(s.requested), report::human_bytes(s.free), w.before.segments,
      report::human_bytes(s.largest_free), s.ratio * 100, report::human_bytes(s.grew_by), f.api);
  f.message += fmt::format(", and a request of {} did not fit", report::human_bytes(s.requested));
  std::string sizes;
  for (uint64_t bytes : s.request_sizes) sizes += (sizes.empty() ? "" : ", ") + report::human_bytes(bytes);
  f.notes.push_back(fmt::format("the requests that did not fit: {}", sizes));
  add_advice(f);
  f.stack = block_stack(trace, w.request.stack_id, w.request.python_stack_id, stacks);
  // Where a program's own pool was made; a framework's pool was made inside the framework.
  if (const auto info = trace.pools.find(pool);
      info != trace.pools.end() && info->second.stack_id && !pool_reserve_owner(trace.pools, pool).framework()) {
    f.related.push_back({report::RelatedRole::Allocation, "", fmt::format("{} was made at:", s.pool),
                         stacks.user_stack(info->second.stack_id)});
  }
  return f;
}

report::Finding stretch_finding(const ProcessTrace& trace, uint32_t pool, const PressureStretch& st, uint64_t run_ns,
                                const FragmentationOptions& options, StackResolver& stacks) {
  report::Finding f = pool_finding(trace, pool, st.worst, st.worst_ns, st.snapshot, stacks);
  report::FragmentationStats& s = *f.fragmentation;
  s.trigger = "stretch";
  s.stretch_from = trace.seconds_since_start(st.from_ns);
  s.stretch_seconds = static_cast<double>(st.ns()) / 1e9;
  f.bytes = st.worst.hole_bytes();
  f.count = 1;
  const double share = run_ns ? 100.0 * static_cast<double>(st.ns()) / static_cast<double>(run_ns) : 100.0;
  f.headline = fmt::format(
      "Fragmentation of {}: for {:.3f} s ({:.0f}% of the run, from {:.3f} s) it was at least half full and at "
      "least {:.0f}% fragmented; at the worst ({:.3f} s) {} of its {} were free but no hole was larger than {} "
      "(fragmentation {:.0f}%): a request larger than that could not be served; the pool was made at:",
      s.pool, s.stretch_seconds, share, s.stretch_from, options.threshold_percent, s.at, report::human_bytes(s.free),
      report::human_bytes(s.reserved), report::human_bytes(s.largest_free), s.ratio * 100);
  add_advice(f);
  // Its stack is where the pool was made (an NVTX heap's nvtxMemHeapRegister); a framework's pool
  // has none recorded, so the site that pinned the most holes stands for it.
  const auto info = trace.pools.find(pool);
  if (info != trace.pools.end() && info->second.stack_id) {
    f.api = info->second.kind == MemorySource::NvtxHeap ? "nvtxMemHeapRegister" : s.pool;
    f.stack = stacks.user_stack(info->second.stack_id);
  } else if (!f.related.empty()) {
    f.api = f.related.front().api;
    f.stack = f.related.front().stack;
  }
  return f;
}

}  // namespace

std::vector<report::Finding> fragmentation_findings(const ProcessTrace& trace, const FragmentationObserver& observer,
                                                    const RunBounds& bounds, StackResolver& stacks,
                                                    const FragmentationOptions& options) {
  std::vector<report::Finding> findings;
  const uint64_t run_ns = bounds.run_ns(trace);
  const uint64_t long_ns = std::max<uint64_t>(kMinStretchNs, static_cast<uint64_t>(kStretchRunShare * run_ns));
  const std::map<uint32_t, PressureStretch> stretches = observer.longest_stretches(bounds.last_ns(trace));
  std::vector<uint32_t> pools;
  for (const auto& [pool, m] : observer.misses()) pools.push_back(pool);
  for (const auto& [pool, st] : stretches) pools.push_back(pool);
  std::sort(pools.begin(), pools.end());
  pools.erase(std::unique(pools.begin(), pools.end()), pools.end());
  // One finding a pool: its worst miss when that was fragmented enough, else its longest stretch.
  for (uint32_t pool : pools) {
    const auto m = observer.misses().find(pool);
    const bool paid = m != observer.misses().end() && m->second.count >= options.min_misses &&
                      static_cast<double>(m->second.grown) >=
                          options.min_grown_share * static_cast<double>(observer.peak_reserved(pool)) &&
                      static_cast<double>(m->second.last_ns - observer.handing_out(pool).first) >=
                          options.min_miss_spread *
                              static_cast<double>(observer.handing_out(pool).second - observer.handing_out(pool).first);
    if (paid && m->second.worst.before.hole_fragmentation() * 100 >= options.threshold_percent) {
      findings.push_back(miss_finding(trace, pool, m->second, stacks));
      continue;
    }
    const auto st = stretches.find(pool);
    if (st != stretches.end() && st->second.ns() >= long_ns)
      findings.push_back(stretch_finding(trace, pool, st->second, run_ns, options, stacks));
  }
  return findings;
}

std::vector<report::Finding> fragmentation_findings(const ProcessTrace& trace, StackResolver& stacks,
                                                    const FragmentationOptions& options) {
  FragmentationObserver observer(trace.pools, options);
  const RunBounds bounds = replay_with_bounds(trace, observer);
  return fragmentation_findings(trace, observer, bounds, stacks, options);
}

}  // namespace cuaudit
