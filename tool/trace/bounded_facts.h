// Facts a process may record without end, kept within bounds as they are read: memory samples
// (neighbours merged, the higher use kept, so peaks survive) and unified-memory migrations (the
// first kMaxManagedMigrations, the rest counted), the kernel runs beside them (likewise) and device-heap calls
// (likewise), so a long run's reading stays the same size.
#pragma once

#include "trace_model.h"

namespace cuaudit {

// Of each two neighbouring samples of a device the one that saw more memory in use stays; the
// samples left say how many went (ProcessTrace::samples_thinned).
void thin_samples(ProcessTrace& process);

// Keeps `m` while there is room, else counts it (ProcessTrace::managed_migrations_dropped); a cause
// this build does not know is kept as Unknown.
void keep_migration(ProcessTrace& process, const ManagedMigration& m);

// Keeps `span` while there is room, else counts it (ProcessTrace::kernel_spans_dropped). False for a
// span that ends before it starts (damage), which is not kept.
bool keep_kernel_span(ProcessTrace& process, const KernelSpan& span);

// Keeps `call` while there is room, else counts it (ProcessTrace::device_heap_calls_dropped).
void keep_device_heap_call(ProcessTrace& process, const DeviceHeapCallFact& call);

}  // namespace cuaudit
