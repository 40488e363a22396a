// Traces before version 5 wrote a pool's blocks as allocations and releases of pseudo-APIs
// numbered right after CUDA's 115 APIs of then, in the order of memory_sources.inc's block
// operations (the context field carried the pool). The reader maps them to today's block APIs.
#pragma once

#include <cstdint>
#include <iterator>

#include "api_table.h"

namespace cuaudit {

// The block API a pre-version-5 API id stands for, or Api::Count for any other id.
inline Api legacy_block_api(uint16_t id) {
  constexpr uint16_t kFirst = 115;
  constexpr Api kLegacy[] = {Api::nvtxMemRegionsRegister, Api::nvtxMemRegionsResize, Api::nvtxMemRegionsUnregister,
                             Api::nvtxMemHeapUnregister,  Api::nvtxMemHeapReset,     Api::cupyPoolMalloc,
                             Api::cupyPoolFree,           Api::torchBlockAlloc,      Api::torchBlockFree};
  return id >= kFirst && id - kFirst < static_cast<int>(std::size(kLegacy)) ? kLegacy[id - kFirst] : Api::Count;
}

}  // namespace cuaudit
