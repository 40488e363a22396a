// What a watch-mode trace's sampled stacks stand for (StackSamplingRecord; the injection's side is
// injection/stack_sampling.h). An allocation of b bytes below the exact size was given its stack
// with probability p(b) = 1 - exp(-b / mean); counting each sampled one 1 / p(b) times (its bytes
// b / p(b)) makes a site's totals unbiased estimates. Go's heap profiler once scaled by b / mean
// instead and over-counted large allocations by 58% (golang/go#26618).
#pragma once

#include <cmath>
#include <cstdint>

#include "trace_format.h"

namespace cuaudit {

struct StackSampling {
  uint64_t mean_bytes = 0;   // 0: every event has its stack (not watch mode)
  uint64_t exact_bytes = 0;  // allocations this big or bigger always have theirs (0: none)

  bool on() const { return mean_bytes != 0; }

  // How many allocations a sampled one of `bytes` stands for (1 with sampling off or when exact).
  double weight(uint64_t bytes) const {
    if (!on() || bytes == 0 || (exact_bytes != 0 && bytes >= exact_bytes)) return 1.0;
    const double p = -std::expm1(-static_cast<double>(bytes) / static_cast<double>(mean_bytes));
    return p > 0 ? 1.0 / p : 1.0;
  }
  // The bytes it stands for, rounded the same way wherever it is added and taken away again.
  uint64_t estimated_bytes(uint64_t bytes) const {
    return on() ? static_cast<uint64_t>(std::llround(static_cast<double>(bytes) * weight(bytes))) : bytes;
  }
  // Whether an allocation's stack is missing because it was not sampled: it counts in every total,
  // but in no site's (the sampled ones' estimates include it).
  bool unsampled(uint64_t stack_id) const { return on() && stack_id == trace::kNoStack; }
};

}  // namespace cuaudit
