// Names of the codes a CUDA call returned ("cudaErrorInvalidValue", "CUDA_ERROR_INVALID_VALUE").
#pragma once

#include <cstdint>
#include <string>

#include "api_table.h"

namespace cuaudit {

// The name of `result` as returned by `api` (runtime, driver, or libc: always success).
std::string result_name(Api api, int32_t result);

}  // namespace cuaudit
