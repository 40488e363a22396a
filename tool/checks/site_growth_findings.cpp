#include "site_growth_findings.h"

#include <algorithm>

#include <fmt/format.h>

#include "sampled_stacks.h"

namespace cuaudit {

GrowthShape judge_growth(const std::vector<uint64_t>& v, double bucket_seconds) {
  GrowthShape shape;
  const size_t n = v.size();
  if (n < 8) return shape;
  const uint64_t q1 = v[n / 4 - 1], q2 = v[n / 2 - 1], q3 = v[3 * n / 4 - 1], q4 = v[n - 1];
  if (!(q1 < q2 && q2 < q3 && q3 < q4)) return shape;
  const uint64_t low = *std::min_element(v.begin(), v.end());
  if (q4 - low < kMinGrowthBytes) return shape;
  uint64_t high = 0, worst_fall = 0;
  for (uint64_t x : v) {
    high = std::max(high, x);
    worst_fall = std::max(worst_fall, high - x);
  }
  if (worst_fall * 10 > high) return shape;
  // The rate: a least-squares line through the second half's buckets.
  double sx = 0, sy = 0, sxx = 0, sxy = 0;
  const size_t from = n / 2;
  for (size_t i = from; i < n; ++i) {
    const double x = static_cast<double>(i) * bucket_seconds, y = static_cast<double>(v[i]);
    sx += x, sy += y, sxx += x * x, sxy += x * y;
  }
  const double m = static_cast<double>(n - from);
  const double denominator = m * sxx - sx * sx;
  if (denominator <= 0) return shape;
  shape.bytes_per_second = (m * sxy - sx * sy) / denominator;
  shape.growing = shape.bytes_per_second > 0;
  return shape;
}

namespace {

std::string rate_text(double bytes_per_hour) {
  return "+" + report::human_bytes(static_cast<uint64_t>(bytes_per_hour)) + " per hour";
}

}  // namespace

std::vector<report::Finding> site_growth_findings(const ProcessTrace& trace, const SiteHistory& history,
                                                  StackResolver& stacks) {
  std::vector<report::Finding> findings;
  if (!trace.python_stacks.empty()) return findings;  // Python lines say it better (growth_findings.h)
  const uint64_t span_ns = history.bucket_ns() * history.buckets();
  if (span_ns < kMinGrowthSpanNs) return findings;
  const double bucket_seconds = static_cast<double>(history.bucket_ns()) / 1e9;
  // Seconds since the process started at the end of bucket b.
  const double offset = trace.seconds_since_start(history.start_ns());
  auto at = [&](size_t b) { return offset + bucket_seconds * static_cast<double>(b + 1); };
  for (const auto& [key, site] : history.sites()) {
    if (key.is_reserve()) continue;  // a pool's cache, not a line of the program (pool findings judge it)
    if (key.device < 0) continue;    // host memory (pinned): the growth judged is the devices'
    const std::vector<uint64_t> values = history.series(site);
    const GrowthShape shape = judge_growth(values, bucket_seconds);
    if (!shape.growing) continue;
    // From the first bucket the site held memory in to the last.
    size_t first = 0;
    while (first + 1 < values.size() && values[first] == 0) ++first;
    const size_t last = values.size() - 1;
    const std::string api(api_info(stacks.api_called(key.stack_id, key.api)).name);
    report::Finding f;
    f.kind = report::FindingKind::Growth;
    f.severity = report::Severity::Warning;
    f.api = api;
    f.bytes = site.bytes;
    f.count = site.count();
    f.pid = trace.pid;
    f.device = key.device;
    report::GrowthStats g;
    g.bytes_per_hour = shape.bytes_per_second * 3600;
    g.start = at(first);
    g.end = at(last);
    g.start_bytes = values[first];
    g.end_bytes = values[last];
    f.growth = g;
    const std::string rate = rate_text(g.bytes_per_hour);
    f.headline = fmt::format(
        "Memory growth: {} at one site ({}): {} live in {} allocation(s) at {:.1f} s, up from {} at {:.1f} s; "
        "allocated at:",
        rate, api, report::human_bytes(g.end_bytes), f.count, g.end, report::human_bytes(g.start_bytes), g.start);
    f.message = fmt::format(
        "the memory this site holds rose through the run ({} to {}, {}) while it never fell back: something keeps "
        "what it allocates (a cache without a bound, a buffer kept per request)",
        report::human_bytes(g.start_bytes), report::human_bytes(g.end_bytes), rate);
    f.notes.push_back(fmt::format(
        "judged from its live bytes over the run ({} buckets of {:.1f} s): rising from quarter to quarter, and "
        "never falling back by more than a tenth",
        values.size(), bucket_seconds));
    if (trace.stack_sampling.on()) f.notes.push_back(sampled_site_note(trace.stack_sampling));
    f.stack = stacks.user_stack(key.stack_id);
    findings.push_back(std::move(f));
  }
  std::sort(findings.begin(), findings.end(), [](const report::Finding& a, const report::Finding& b) {
    return a.growth->bytes_per_hour > b.growth->bytes_per_hour;
  });
  return findings;
}

}  // namespace cuaudit
