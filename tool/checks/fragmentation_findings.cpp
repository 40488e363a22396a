#include "fragmentation_findings.h"

#include <algorithm>
#include <tuple>

#include <fmt/format.h>

#include "pool_names.h"
#include "python_frames.h"

namespace cuaudit {
namespace {

constexpr size_t kPinningSites = 3;
constexpr size_t kRequestSizes = 8;

std::vector<PinningSite> pinning_sites(const LiveVisitor& blocks) {
  std::map<std::tuple<uint64_t, uint64_t, Api>, PinningSite> sites;
  blocks([&](const MemoryEvent& b) {
    PinningSite& s = sites[{b.stack_id, b.python_stack_id, b.api}];
    s.stack_id = b.stack_id, s.python_stack_id = b.python_stack_id, s.api = b.api;
    s.bytes += b.bytes, ++s.count;
  });
  std::vector<PinningSite> out;
  for (auto& [key, site] : sites) out.push_back(site);
  std::sort(out.begin(), out.end(), [](const PinningSite& a, const PinningSite& b) { return a.bytes > b.bytes; });
  if (out.size() > kPinningSites) out.resize(kPinningSites);
  return out;
}

// The stack a report shows for a block: its Python line when it has one, else its native stack.
std::vector<report::Frame> block_stack(const ProcessTrace& trace, uint64_t stack_id, uint64_t python_stack_id,
                                       StackResolver& stacks) {
  if (python_stack_id) {
    std::vector<report::Frame> python = python_frames(trace, python_stack_id);
    const size_t user = user_python_frame(python);
    if (user < python.size()) return {python.begin() + static_cast<std::ptrdiff_t>(user), python.end()};
  }
  return stacks.user_stack(stack_id);
}

}  // namespace

void FragmentationObserver::on_pool_growing(const PoolSegmentFact& segment, const PoolUsage& before,
                                            const LiveVisitor& blocks) {
  // Only a pool with holes to miss in: a full pool that grows is simply full.
  if (!before.hole_bytes()) {
    growing_.erase(segment.pool);
    return;
  }
  Growing& g = growing_[segment.pool];
  g.segment = segment;
  g.before = before;
  g.pinning.clear();
  // What pins the holes is asked only when this could become the pool's worst moment.
  const auto known = misses_.find(segment.pool);
  if (known == misses_.end() || before.hole_fragmentation() > known->second.worst.before.hole_fragmentation())
    g.pinning = pinning_sites(blocks);
}

void FragmentationObserver::on_live(const MemoryEvent& block) {
  if (growing_.empty() || !is_pool_block(api_info(block.api).family)) return;
  const auto it = growing_.find(block.pool);
  if (it == growing_.end()) return;
  const Growing g = std::move(it->second);
  growing_.erase(it);
  // The request the growth was for lands in the new segment; one that fit elsewhere was not it.
  const bool in_new_segment = block.key >= g.segment.base && block.key - g.segment.base < g.segment.bytes;
  if (!in_new_segment || block.bytes == 0) return;
  // Enough was free in holes, and no hole was big enough: that is a miss.
  if (g.before.hole_bytes() < block.bytes || g.before.largest_free >= block.bytes) return;
  PoolMisses& m = misses_[block.pool];
  ++m.count;
  ++m.sizes[block.bytes];
  if (m.count == 1 || g.before.hole_fragmentation() > m.worst.before.hole_fragmentation()) {
    m.worst = PoolMiss{block, g.before, g.segment.bytes};
    m.pinning = g.pinning;
  }
}

std::vector<report::Finding> fragmentation_findings(const ProcessTrace& trace, const FragmentationObserver& observer,
                                                    StackResolver& stacks, const FragmentationOptions& options) {
  std::vector<report::Finding> findings;
  for (const auto& [pool, m] : observer.misses()) {
    const PoolMiss& w = m.worst;
    const double ratio = w.before.hole_fragmentation();
    if (ratio * 100 < options.threshold_percent) continue;
    const std::string name = pool_description(trace.pools, pool);
    const std::string api(api_info(stacks.api_called(w.request.stack_id, w.request.api)).name);
    report::Finding f;
    f.kind = report::FindingKind::Fragmentation;
    f.severity = report::Severity::Warning;
    f.api = api;
    f.bytes = w.request.bytes;
    f.count = m.count;
    f.pid = trace.pid;
    if (w.request.device >= 0) f.device = w.request.device;
    f.at = trace.seconds_since_start(w.request.time_ns);
    report::FragmentationStats s;
    s.pool = name;
    s.at = *f.at;
    s.requested = w.request.bytes;
    s.reserved = w.before.reserved, s.used = w.before.used;
    s.free = w.before.hole_bytes(), s.largest_free = w.before.largest_free;
    s.ratio = ratio;
    s.grew_by = w.grew_by;
    s.misses = m.count;
    for (auto it = m.sizes.rbegin(); it != m.sizes.rend() && s.request_sizes.size() < kRequestSizes; ++it)
      s.request_sizes.push_back(it->first);
    f.headline = fmt::format(
        "Fragmentation of {}: {} request(s) did not fit in its free memory although enough was free; at the worst "
        "({:.3f} s) {} was asked with {} free in {} segment(s) but no hole larger than {} (fragmentation {:.0f}%), "
        "and the pool took {} more instead; asked by {} at:",
        name, m.count, s.at, report::human_bytes(s.requested), report::human_bytes(s.free), w.before.segments,
        report::human_bytes(s.largest_free), ratio * 100, report::human_bytes(s.grew_by), api);
    f.message = fmt::format(
        "{} is cut into holes: {} of its {} were free, the largest hole {}, and a request of {} did not fit", name,
        report::human_bytes(s.free), report::human_bytes(s.reserved), report::human_bytes(s.largest_free),
        report::human_bytes(s.requested));
    std::string sizes;
    for (uint64_t bytes : s.request_sizes) sizes += (sizes.empty() ? "" : ", ") + report::human_bytes(bytes);
    f.notes.push_back(fmt::format("the requests that did not fit: {}", sizes));
    f.notes.push_back(
        "keep block sizes uniform (round requests up to a few size classes), give long-lived blocks a pool of their "
        "own so they do not pin holes among short-lived ones, or use stream-ordered allocation (cudaMallocAsync); "
        "for PyTorch, PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True");
    f.stack = block_stack(trace, w.request.stack_id, w.request.python_stack_id, stacks);
    for (const PinningSite& p : m.pinning) {
      const std::string holder(api_info(stacks.api_called(p.stack_id, p.api)).name);
      f.related.push_back({report::RelatedRole::Holder, holder,
                           fmt::format("{} in {} live block(s) sat between the holes then, handed out at:",
                                       report::human_bytes(p.bytes), p.count),
                           block_stack(trace, p.stack_id, p.python_stack_id, stacks)});
    }
    if (const auto info = trace.pools.find(pool); info != trace.pools.end() && info->second.stack_id) {
      f.related.push_back({report::RelatedRole::Allocation, "", fmt::format("{} was made at:", name),
                           stacks.user_stack(info->second.stack_id)});
    }
    f.fragmentation = std::move(s);
    findings.push_back(std::move(f));
  }
  return findings;
}

std::vector<report::Finding> fragmentation_findings(const ProcessTrace& trace, StackResolver& stacks,
                                                    const FragmentationOptions& options) {
  FragmentationObserver observer;
  replay(trace, &observer);
  return fragmentation_findings(trace, observer, stacks, options);
}

}  // namespace cuaudit
