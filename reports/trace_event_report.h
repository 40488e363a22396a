// --perfetto FILE: the memory timeline as a Chrome trace-event JSON file, which ui.perfetto.dev and
// chrome://tracing open: per process and device, counters of memory in use (cuMemGetInfo), of
// what the program's tracked allocations held (by family), and of the stream-ordered pool; each
// device's peak as an instant event with the sites that held the most then; and each allocation's
// life (report.allocation_spans) as a slice from its allocation to its release.
#pragma once

#include <string>

#include "report_model.h"

namespace cuaudit::report {

std::string render_trace_events(const Report& report);

}  // namespace cuaudit::report
