// Names of the codes a CUDA call returned ("cudaErrorInvalidValue", "CUDA_ERROR_INVALID_VALUE").
#pragma once

#include <cstdint>
#include <string>

#include "api_table.h"

namespace cuaudit {

// Whether an API name belongs to the runtime ("cuda...") or the driver ("cu...").
enum class ApiLayer { Runtime, Driver, Other };
ApiLayer api_layer(std::string_view api_name);

// The name of `result` as returned by an API of `layer` ("cudaErrorInvalidValue",
// "CUDA_ERROR_INVALID_VALUE"), or "error N" when unknown.
std::string result_name(ApiLayer layer, int32_t result);
inline std::string result_name(Api api, int32_t result) { return result_name(api_layer(api_info(api).name), result); }

// The toolkit's one-sentence description of `result`, or empty.
std::string result_text(ApiLayer layer, int32_t result);

}  // namespace cuaudit
