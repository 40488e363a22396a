// The source lines of a --device-heap run's calls (docs/RESOURCES.md): each distinct place a kernel
// called device malloc or free, looked up in the line table of the kept cubin that defines the
// kernel (kernel-code/<hash>.cubin, kept as patched modules load). Needs no toolkit: a recorded run
// is read the same anywhere. Kernels built without -lineinfo or -G have no line table: their calls
// stay named by kernel and offset.
#pragma once

#include <string>

#include "trace_model.h"

namespace cuaudit {

// Fills `trace`.device_heap_lines for the calls inside their kernel's own code.
void add_device_heap_lines(const std::string& run_dir, ProcessTrace& trace);

}  // namespace cuaudit
