// The words a finding built from watch mode's sampled stacks carries (tool/trace/stack_sampling.h).
#pragma once

#include <string>

#include "stack_sample_weights.h"

namespace cuaudit {

// For the process: what is exact and what is estimated in its report.
std::string sampled_process_note(const StackSampling& sampling);

// How the sample was taken, for a site whose figures are estimates.
std::string sampled_site_note(const StackSampling& sampling);

// For a sampled site's leak: what its `count` sampled allocations (`bytes`) stand for.
std::string sampled_leak_note(const StackSampling& sampling, uint64_t count, double estimated_count,
                              double estimated_bytes);

// For the allocations that leaked without a sampled stack.
std::string unsampled_leak_note(const StackSampling& sampling);

}  // namespace cuaudit
