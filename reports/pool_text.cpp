#include "pool_text.h"

#include <algorithm>
#include <map>

#include <fmt/format.h>

namespace cuaudit::report {

std::string segment_bar(const SegmentPicture& segment) {
  std::string bar(kBarColumns, '-');
  if (!segment.bytes) return bar;
  // Per column, the bytes each site covers (key -1: the other sites).
  std::vector<std::map<int, uint64_t>> covered(kBarColumns);
  const double width = static_cast<double>(segment.bytes) / kBarColumns;
  for (const BlockSpan& b : segment.blocks) {
    const uint64_t end = std::min(segment.bytes, b.offset + b.bytes);
    for (uint64_t at = b.offset; at < end;) {
      const size_t column = std::min(kBarColumns - 1, static_cast<size_t>(static_cast<double>(at) / width));
      const uint64_t column_end =
          column + 1 == kBarColumns ? segment.bytes : static_cast<uint64_t>((column + 1) * width);
      const uint64_t upto = std::max(at + 1, std::min(end, column_end));
      covered[column][b.site] += upto - at;
      at = upto;
    }
  }
  for (size_t c = 0; c < kBarColumns; ++c) {
    uint64_t total = 0;
    std::pair<int, uint64_t> most{-1, 0};
    for (const auto& [site, bytes] : covered[c]) {
      total += bytes;
      if (bytes > most.second) most = {site, bytes};
    }
    if (total * 2 < static_cast<uint64_t>(width)) continue;  // mostly free
    bar[c] = most.first >= 0 && most.first < 26 ? static_cast<char>('A' + most.first) : '#';
  }
  return bar;
}

std::vector<std::string> picture_lines(const PoolPicture& picture,
                                       const std::function<std::string(const Frame&)>& where) {
  std::vector<std::string> out;
  if (picture.segments.empty()) return out;
  out.push_back(fmt::format("  the pool then, {} column(s) a segment (A-{}: the sites below, #: other sites, -: free):",
                            kBarColumns, static_cast<char>('A' + std::max<size_t>(picture.sites.size(), 1) - 1)));
  for (size_t i = 0; i < picture.segments.size() && i < kBarSegments; ++i) {
    out.push_back(fmt::format("    [{}] {}", segment_bar(picture.segments[i]), human_bytes(picture.segments[i].bytes)));
  }
  if (picture.segments.size() > kBarSegments) {
    out.push_back(fmt::format("    and {} more segment(s) (the JSON and HTML reports have them all)",
                              picture.segments.size() - kBarSegments));
  }
  for (size_t i = 0; i < picture.sites.size(); ++i) {
    const PictureSite& s = picture.sites[i];
    out.push_back(fmt::format("    {} = {} in {} block(s) ({}) {}", static_cast<char>('A' + i), human_bytes(s.bytes),
                              s.count, s.api, s.at ? where(*s.at) : std::string("(no stack)")));
  }
  return out;
}

std::vector<std::string> pool_series_lines(const Timeline& timeline, uint64_t pid) {
  std::vector<std::string> out;
  for (const PoolSeries& p : timeline.pool_series) {
    if (p.pid != pid || p.t.empty()) continue;
    const uint64_t reserved = *std::max_element(p.reserved.begin(), p.reserved.end());
    const uint64_t used = *std::max_element(p.used.begin(), p.used.end());
    // A pool whose segments were never recorded (a framework hook that sees only its blocks) has
    // no reserve to tell: "reserved up to 0 B" would say it held nothing.
    std::string line = reserved ? fmt::format("Pool {}: reserved up to {}, used up to {}", p.pool,
                                              human_bytes(reserved), human_bytes(used))
                                : fmt::format(
                                      "Pool {}: used up to {} (its segments were not recorded: what it reserved "
                                      "is not known)",
                                      p.pool, human_bytes(used));
    if (p.t.size() == 1) line += fmt::format("; one sample, at {:.3f} s", p.t.front());
    // The most fragmented sample: 1 - largest free / free in holes.
    size_t worst = p.t.size();
    double ratio = 0;
    for (size_t i = 0; i < p.t.size() && i < p.holes.size(); ++i) {
      if (!p.holes[i]) continue;
      const double r = 1.0 - static_cast<double>(p.largest_free[i]) / static_cast<double>(p.holes[i]);
      if (worst == p.t.size() || r > ratio) worst = i, ratio = r;
    }
    if (worst < p.t.size()) {
      line += fmt::format("; most fragmented at {:.3f} s: {} free in holes, the largest {} ({:.0f}%)", p.t[worst],
                          human_bytes(p.holes[worst]), human_bytes(p.largest_free[worst]), ratio * 100);
    }
    out.push_back(std::move(line));
  }
  // CUDA's stream-ordered pool of each device (cudaMallocAsync): reserved against used, no more.
  std::map<int, std::pair<uint64_t, uint64_t>> stream_ordered;  // device -> most reserved, most used
  std::map<int, uint64_t> unused;                               // device -> most reserved but unused
  for (const TimelineSample& x : timeline.samples) {
    if (x.pid != pid || !x.pool_reserved) continue;
    auto& [reserved, used] = stream_ordered[x.device];
    reserved = std::max(reserved, *x.pool_reserved);
    used = std::max(used, x.pool_used.value_or(0));
    unused[x.device] =
        std::max(unused[x.device], *x.pool_reserved - std::min(*x.pool_reserved, x.pool_used.value_or(0)));
  }
  for (const auto& [device, figures] : stream_ordered) {
    if (!figures.first) continue;
    out.push_back(
        fmt::format("Pool CUDA's stream-ordered pool of device {}: reserved up to {}, used up to {}, reserved "
                    "but unused up to {} (CUDA tells no largest free block: its fragmentation is not measured)",
                    device, human_bytes(figures.first), human_bytes(figures.second), human_bytes(unused[device])));
  }
  return out;
}

}  // namespace cuaudit::report
