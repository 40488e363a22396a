// Sites that allocate and free again and again: how many pairs, how long their memory lived, and
// how much of the run the program spent inside their allocation and release calls (measured in the
// target), with the advice that fits the memory family. `allocation_churn` is info; a warning
// when the calls took at least --churn-threshold percent of the run.
#pragma once

#include <optional>
#include <vector>

#include "report_model.h"
#include "stack_resolver.h"
#include "trace_model.h"

namespace cuaudit {

struct ChurnOptions {
  uint64_t min_pairs = 1000;            // fewer released allocations at a site: not churn
  double min_pairs_per_second = 10;     // ... nor fewer per second of the run
  std::optional<double> warn_percent;   // --churn-threshold: a warning from this share of the run on
};

std::vector<report::Finding> churn_findings(const ProcessTrace& trace, StackResolver& stacks,
                                            const ChurnOptions& options);

}  // namespace cuaudit
