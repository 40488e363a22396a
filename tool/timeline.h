// The memory timeline of a process: the driver's view of each device over time (cuMemGetInfo
// samples recorded by the injection) beside what the program's tracked allocations held, and at
// each device's peak, the allocation sites that held the most.
#pragma once

#include <cstddef>

#include "report_model.h"
#include "stack_resolver.h"
#include "trace_model.h"

namespace cuaudit {

// Appends `trace`'s samples and peaks to `timeline` (nothing when the trace has no samples).
void build_timeline(const ProcessTrace& trace, StackResolver& stacks, report::Timeline& timeline, size_t top_sites = 5);

}  // namespace cuaudit
