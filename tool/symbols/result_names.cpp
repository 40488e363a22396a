#include "result_names.h"

#include <fmt/format.h>

namespace cuaudit {
namespace {

struct Known {
  const char* name;
  const char* text;
};

Known runtime_result(int32_t value) {
  switch (value) {
#define CUAUDIT_RUNTIME_RESULT(value, name, text) \
  case value:                                     \
    return {name, text};
#define CUAUDIT_DRIVER_RESULT(value, name, text)
#include "cuda_result_names.inc"
#undef CUAUDIT_RUNTIME_RESULT
#undef CUAUDIT_DRIVER_RESULT
  }
  return {nullptr, nullptr};
}

Known driver_result(int32_t value) {
  switch (value) {
#define CUAUDIT_RUNTIME_RESULT(value, name, text)
#define CUAUDIT_DRIVER_RESULT(value, name, text) \
  case value:                                    \
    return {name, text};
#include "cuda_result_names.inc"
#undef CUAUDIT_RUNTIME_RESULT
#undef CUAUDIT_DRIVER_RESULT
  }
  return {nullptr, nullptr};
}

Known lookup(ApiLayer layer, int32_t result) {
  switch (layer) {
    case ApiLayer::Runtime:
      return runtime_result(result);
    case ApiLayer::Driver:
      return driver_result(result);
    case ApiLayer::Other:
      break;
  }
  return {result == 0 ? "success" : nullptr, nullptr};
}

}  // namespace

ApiLayer api_layer(std::string_view name) {
  if (name.substr(0, 4) == "cuda") return ApiLayer::Runtime;
  if (name.substr(0, 2) == "cu") return ApiLayer::Driver;
  return ApiLayer::Other;
}

std::string result_name(ApiLayer layer, int32_t result) {
  const Known k = lookup(layer, result);
  return k.name ? k.name : fmt::format("error {}", result);
}

std::string result_text(ApiLayer layer, int32_t result) {
  const Known k = lookup(layer, result);
  return k.text ? k.text : "";
}

}  // namespace cuaudit
