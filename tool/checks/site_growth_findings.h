// Native growth: an allocation site whose live memory kept rising over the run while the rest of
// the program's memory did not (a cache without a bound, a buffer kept per request), with its rate
// ("+48.0 MiB per hour"). Judged from the shape of the site's live bytes over time (SiteHistory):
//   - the run lasted at least kMinGrowthSpanNs (growth is what long runs show; a short test that
//     allocates as it goes is not a service that grows);
//   - the site's live bytes rise from each quarter of the run to the next, and still rise in its
//     second half (memory that grows once during warm-up and then stays is not growth);
//   - they never fall back by more than a tenth of their highest value (memory that rises and falls
//     in phases is not growth), and rose by at least kMinGrowthBytes.
// A `growth` warning, since it is judged from a shape; Python programs have their own growth
// check by Python line (growth_findings.h).
#pragma once

#include <cstdint>
#include <vector>

#include "report_model.h"
#include "site_history.h"
#include "stack_resolver.h"
#include "trace_model.h"

namespace cuaudit {

inline constexpr uint64_t kMinGrowthSpanNs = 20'000'000'000;
inline constexpr uint64_t kMinGrowthBytes = 1 << 20;

struct GrowthShape {
  bool growing = false;
  double bytes_per_second = 0;  // least squares over the second half
};

// The rule above, on one site's live bytes at the end of each of `values.size()` buckets of
// `bucket_seconds`; on its own so that it is tested without traces.
GrowthShape judge_growth(const std::vector<uint64_t>& values, double bucket_seconds);

std::vector<report::Finding> site_growth_findings(const ProcessTrace& trace, const SiteHistory& history,
                                                  StackResolver& stacks);

}  // namespace cuaudit
