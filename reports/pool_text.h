// Pools in the text report: a line per pool over the run (from the timeline's pool series) and a
// fragmentation finding's segments drawn as bars of characters, one letter an allocation site,
// so that a terminal shows what the HTML report's segment view shows.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "report_model.h"

namespace cuaudit::report {

inline constexpr size_t kBarColumns = 64;
inline constexpr size_t kBarSegments = 4;

// One segment as kBarColumns characters: a column is the letter of the site covering most of it
// ('A' is sites[0]), '#' other sites, '-' when it is mostly free.
std::string segment_bar(const SegmentPicture& segment);

// The picture's lines: a key, up to kBarSegments bars, and each lettered site with `where` its frame.
std::vector<std::string> picture_lines(const PoolPicture& picture,
                                       const std::function<std::string(const Frame&)>& where);

// "Pool CuPy's memory pool: reserved up to ..., used up to ...; most fragmented at ...", one per
// pool of process `pid` in the series, then one per device whose stream-ordered pool the samples
// show (reserved against used only).
std::vector<std::string> pool_series_lines(const Timeline& timeline, uint64_t pid);

}  // namespace cuaudit::report
