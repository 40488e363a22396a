// Memory that grew while the program ran, attributed to the Python line that allocated it.
//
// A caching allocator (PyTorch's) holds its segments until the process ends, so at exit a program
// that keeps every step's activations in a list and one that does not both "hold" memory. What
// differs is when: a healthy training loop allocates its segments in the first steps and then
// reuses them, a growing one keeps allocating to the end. A Python line is reported as growth when
// memory still held at exit was allocated from it at least kMinGrowthAllocations times and at
// least a third of those came in the second half of the program's work after its first one. Work
// is counted in kernel launches (interpreter start-up and shutdown launch nothing); a trace
// without launch counts uses time to the end of the process instead.
#pragma once

#include <vector>

#include "replay.h"
#include "report_model.h"
#include "stack_resolver.h"

namespace cuaudit {

inline constexpr uint64_t kMinGrowthAllocations = 4;

std::vector<report::Finding> growth_findings(const ProcessTrace& trace, const std::vector<LeakedAllocation>& held,
                                             StackResolver& stacks);

}  // namespace cuaudit
