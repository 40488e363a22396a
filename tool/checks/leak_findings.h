// Groups leaked allocations by allocation site, LeakSanitizer style, into report findings.
#pragma once

#include <vector>

#include "replay.h"
#include "report_model.h"
#include "stack_resolver.h"

namespace cuaudit {

// One finding per (allocation stack, Python stack, API, how the allocation's life ended), biggest
// first.
std::vector<report::Finding> leak_findings(const ProcessTrace& trace, const ReplayResult& replayed,
                                           StackResolver& stacks);

}  // namespace cuaudit
