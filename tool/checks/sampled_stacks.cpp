#include "sampled_stacks.h"

#include <cmath>

#include <fmt/format.h>

#include "report_model.h"

namespace cuaudit {
namespace {

std::string how_sampled(const StackSampling& s) {
  std::string text = fmt::format("one stack per {} allocated on average", report::human_bytes(s.mean_bytes));
  if (s.exact_bytes)
    text += fmt::format("; allocations of {} or more always have theirs", report::human_bytes(s.exact_bytes));
  return text;
}

}  // namespace

std::string sampled_process_note(const StackSampling& sampling) {
  return fmt::format(
      "recorded in watch mode: host stacks were sampled ({}); allocations, releases, live and leaked bytes are "
      "exact, what each site holds is estimated from the sampled stacks",
      how_sampled(sampling));
}

std::string sampled_site_note(const StackSampling& sampling) {
  return fmt::format(
      "estimated from sampled stacks (watch mode: {}): each sampled allocation counts for the allocations it "
      "stands for",
      how_sampled(sampling));
}

std::string sampled_leak_note(const StackSampling& sampling, uint64_t count, double estimated_count,
                              double estimated_bytes) {
  return fmt::format(
      "from sampled stacks (watch mode: {}): the {} sampled allocation(s) here stand for about {} in about {} "
      "allocation(s) at this site",
      how_sampled(sampling), count, report::human_bytes(static_cast<uint64_t>(std::llround(estimated_bytes))),
      static_cast<uint64_t>(std::llround(estimated_count)));
}

std::string unsampled_leak_note(const StackSampling& sampling) {
  return fmt::format(
      "allocations whose stacks were not sampled (watch mode: {}): every one of them is counted here, and the "
      "sampled findings estimate which sites they came from",
      how_sampled(sampling));
}

}  // namespace cuaudit
