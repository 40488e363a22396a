// Allocations that failed for lack of memory, diagnosed: the device at that moment (total, free,
// what the program held by family, its pool's unused reserve, other processes' memory), the sites
// that held the most, and a one-line verdict on what filled the device. `out_of_memory` is an
// error when the program never looked at the failure, a warning when it handled it.
#pragma once

#include <set>
#include <vector>

#include "error_findings.h"
#include "report_model.h"
#include "stack_resolver.h"
#include "trace_model.h"

namespace cuaudit {

// Failures it reports are added to `explained`: the error check does not report them again.
std::vector<report::Finding> oom_findings(const ProcessTrace& trace, StackResolver& stacks, FailureJudge& failures,
                                          std::set<uint64_t>& explained);

// The verdict, on its own so that it is tested without traces.
struct OomFacts {
  uint64_t requested = 0;
  std::optional<uint64_t> total, free;  // none: host memory
  uint64_t program_held = 0;
  std::optional<uint64_t> other_processes;
};
std::string oom_verdict(const OomFacts& facts);

}  // namespace cuaudit
