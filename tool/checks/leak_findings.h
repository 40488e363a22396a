// Groups leaked allocations by allocation site, LeakSanitizer style, into report findings.
#pragma once

#include <vector>

#include "holders.h"
#include "replay.h"
#include "report_model.h"
#include "stack_resolver.h"

namespace cuaudit {

// One finding per (allocation stack, Python stack, API, how the allocation's life ended), biggest
// first; a group an allocator holds on purpose is made held_by_allocator (`holders`).
std::vector<report::Finding> leak_findings(const ProcessTrace& trace, const ReplayResult& replayed,
                                           StackResolver& stacks, Holders& holders);

}  // namespace cuaudit
