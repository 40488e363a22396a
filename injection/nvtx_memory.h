// The NVTX memory extension's injection: see nvtx_memory.cpp.
#pragma once

#define NVTX_NO_IMPL
#include <nvtx3/nvToolsExtMem.h>

namespace cuaudit::inject {

// Fills in the memory extension's function slots of `module`; false for another module (or one
// this build cannot read), whose slots NVTX then turns into no-ops.
bool nvtx_memory_module(nvtxExtModuleInfo_t* module) noexcept;

}  // namespace cuaudit::inject
