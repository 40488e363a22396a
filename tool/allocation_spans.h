// --perfetto's allocation tracks: the life of every allocation (allocation to release, or to the
// process's end), from one more replay of the trace, made only when asked for.
#pragma once

#include "report_model.h"
#include "stack_resolver.h"
#include "trace_model.h"

namespace cuaudit {

// Appends `trace`'s spans to report.allocation_spans while fewer than `limit` are there; counts the
// others in report.allocation_spans_left_out.
void collect_allocation_spans(const ProcessTrace& trace, StackResolver& stacks, size_t limit, report::Report& report);

}  // namespace cuaudit
