// What kernels did with the device heap, from a --device-heap run (ProcessTrace::device_heap_*):
// every device-side malloc and free replayed in the GPU's order. Allocations still live when the
// process ended are leaks, grouped by where the device code called malloc and by the host stack
// that launched the kernel; a free of memory freed before is a double free, of an address malloc
// never returned an invalid free; a malloc that returned NULL means the heap ran out.
#pragma once

#include <vector>

#include "report_model.h"
#include "stack_resolver.h"
#include "trace_model.h"

namespace cuaudit {

std::vector<report::Finding> device_heap_findings(const ProcessTrace& trace, StackResolver& stacks);

}  // namespace cuaudit
