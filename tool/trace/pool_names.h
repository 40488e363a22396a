// How reports name the pool a block came from: "pool 'SimplePool' (NVTX heap)", "CuPy's memory pool".
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "trace_model.h"

namespace cuaudit {

std::string pool_description(const std::map<uint32_t, PoolInfo>& pools, uint64_t pool);

}  // namespace cuaudit
