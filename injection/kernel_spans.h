// Kernels' runs on the GPU, from CUPTI's concurrent-kernel activity records, as KernelSpan
// records: the tool names the kernels whose page faults pulled managed memory to a device
// (docs/RESOURCES.md, "Managed memory that migrates"). Enabled beside the unified-memory counters,
// at the program's first managed allocation, so a program without managed memory pays nothing.
#pragma once

#include <cupti.h>

#include <cstdint>

namespace cuaudit::inject {

// Asks CUPTI for the records (its activity callbacks must already be registered). False when
// CUPTI refuses; the migrations are still recorded, without kernels.
bool enable_kernel_spans() noexcept;

// One CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL record as a KernelSpan record (and, the first time its
// kernel's name is seen, a Kernel record naming it); `offset` moves CUPTI's timestamps onto the
// trace's clock. False for a record it cannot place.
bool record_kernel_span(const CUpti_Activity* record, int64_t offset) noexcept;

}  // namespace cuaudit::inject
