// The device heap's use over a --device-heap run, charted beside the pools (docs/RESOURCES.md): a
// point after each launch whose kernels called device-side malloc or free, with what their
// allocations held then (replayed in the GPU's order) against the heap's size at that launch
// (cudaLimitMallocHeapSize). The heap tells no largest free block: no fragmentation is measured.
#pragma once

#include "report_model.h"
#include "trace_model.h"

namespace cuaudit {

// Appends one series per device whose heap `trace`'s kernels used to `timeline`.pool_series.
void add_device_heap_series(const ProcessTrace& trace, report::Timeline& timeline);

}  // namespace cuaudit
