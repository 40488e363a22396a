#include "pool_picture.h"

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

#include "python_frames.h"

namespace cuaudit {
namespace {

using SiteKey = std::tuple<uint64_t, uint64_t, Api>;

SiteKey site_of(const MemoryEvent& b) { return {b.stack_id, b.python_stack_id, b.api}; }

// Every site with live blocks in the segments, the biggest first; the first kPictureSites keep
// their place, the others are drawn as one.
std::vector<PinningSite> sites_of(const std::vector<SegmentLayout>& layout) {
  std::map<SiteKey, PinningSite> sites;
  for (const SegmentLayout& segment : layout) {
    for (const MemoryEvent* b : segment.blocks) {
      PinningSite& s = sites[site_of(*b)];
      s.stack_id = b->stack_id, s.python_stack_id = b->python_stack_id, s.api = b->api;
      s.bytes += b->bytes, ++s.count;
    }
  }
  std::vector<PinningSite> out;
  for (auto& [key, site] : sites) out.push_back(site);
  std::stable_sort(out.begin(), out.end(),
                   [](const PinningSite& a, const PinningSite& b) { return a.bytes > b.bytes; });
  return out;
}

// The files of a pool's own code: those of the frames that made it, inside their first function
// the block's stack shares (the common caller: main, a setup routine), the caller's file excepted.
std::set<std::string> pool_code_files(const std::vector<report::Frame>& made, const std::vector<report::Frame>& block) {
  std::set<std::string> files;
  for (const report::Frame& m : made) {
    const bool shared =
        std::any_of(block.begin(), block.end(), [&](const report::Frame& b) { return b.function == m.function; });
    if (shared) {
      files.erase(m.file);
      return files;
    }
    if (!m.file.empty()) files.insert(m.file);
  }
  return {};  // no common caller: nothing is known to be the pool's
}

}  // namespace

const report::Frame* site_frame(const std::vector<report::Frame>& made, const std::vector<report::Frame>& block) {
  const std::set<std::string> pool_files = pool_code_files(made, block);
  for (const report::Frame& f : block) {
    if (!pool_files.count(f.file)) return &f;
  }
  return block.empty() ? nullptr : &block.front();
}

PoolSnapshot snapshot_pool(const PoolsView& pools, uint32_t pool) {
  std::vector<SegmentLayout> layout = pools.layout(pool);
  PoolSnapshot out;
  std::vector<PinningSite> sites = sites_of(layout);
  if (sites.size() > kPictureSites) sites.resize(kPictureSites);
  std::map<SiteKey, int> index;
  for (size_t i = 0; i < sites.size(); ++i) index[{sites[i].stack_id, sites[i].python_stack_id, sites[i].api}] = int(i);
  out.sites = std::move(sites);
  if (layout.size() > kPictureSegments) {  // the biggest segments, drawn in address order
    std::stable_sort(layout.begin(), layout.end(),
                     [](const SegmentLayout& a, const SegmentLayout& b) { return a.bytes > b.bytes; });
    layout.resize(kPictureSegments);
    std::sort(layout.begin(), layout.end(),
              [](const SegmentLayout& a, const SegmentLayout& b) { return a.base < b.base; });
    out.truncated = true;
  }
  for (const SegmentLayout& l : layout) {
    PoolSnapshot::Segment& segment = out.segments.emplace_back();
    segment.bytes = l.bytes;
    for (const MemoryEvent* b : l.blocks) {
      const auto found = index.find(site_of(*b));
      const int site = found == index.end() ? -1 : found->second;
      // A block that starts before the segment (a damaged trace) is drawn from its start.
      const uint64_t offset = b->key > l.base ? b->key - l.base : 0;
      const uint64_t bytes = std::min(b->bytes, l.bytes - std::min(offset, l.bytes));
      // Blocks of one site closer than a rounding gap are one span: the picture is of holes.
      if (!segment.spans.empty()) {
        PoolSnapshot::Span& last = segment.spans.back();
        if (last.site == site && offset >= last.offset + last.bytes &&
            offset - (last.offset + last.bytes) < kRoundingGap) {
          last.bytes = offset + bytes - last.offset;
          continue;
        }
      }
      if (segment.spans.size() == kPictureSpans) {
        out.truncated = true;
        break;
      }
      segment.spans.push_back({offset, bytes, site});
    }
  }
  return out;
}

std::vector<report::Frame> block_stack(const ProcessTrace& trace, uint64_t stack_id, uint64_t python_stack_id,
                                       StackResolver& stacks) {
  if (python_stack_id) {
    std::vector<report::Frame> python = python_frames(trace, python_stack_id);
    const size_t user = user_python_frame(python);
    if (user < python.size()) return {python.begin() + static_cast<std::ptrdiff_t>(user), python.end()};
  }
  return stacks.user_stack(stack_id);
}

report::PoolPicture pool_picture(const ProcessTrace& trace, uint32_t pool, const PoolSnapshot& snapshot,
                                 StackResolver& stacks) {
  report::PoolPicture p;
  const auto info = trace.pools.find(pool);
  const std::vector<report::Frame> made = info != trace.pools.end() && info->second.stack_id
                                              ? stacks.user_stack(info->second.stack_id)
                                              : std::vector<report::Frame>{};
  for (const PinningSite& s : snapshot.sites) {
    report::PictureSite site;
    site.api = std::string(api_info(stacks.api_called(s.stack_id, s.api)).name);
    site.bytes = s.bytes, site.count = s.count;
    const std::vector<report::Frame> stack = block_stack(trace, s.stack_id, s.python_stack_id, stacks);
    if (const report::Frame* at = site_frame(made, stack)) site.at = *at;
    p.sites.push_back(std::move(site));
  }
  for (const PoolSnapshot::Segment& s : snapshot.segments) {
    report::SegmentPicture& segment = p.segments.emplace_back();
    segment.bytes = s.bytes;
    for (const PoolSnapshot::Span& span : s.spans) segment.blocks.push_back({span.offset, span.bytes, span.site});
  }
  p.truncated = snapshot.truncated;
  return p;
}

}  // namespace cuaudit
