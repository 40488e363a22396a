#include "result_names.h"

#include <fmt/format.h>

namespace cuaudit {
namespace {

const char* runtime_name(int32_t value) {
  switch (value) {
#define CUAUDIT_RUNTIME_RESULT(value, name) \
  case value:                               \
    return name;
#define CUAUDIT_DRIVER_RESULT(value, name)
#include "cuda_result_names.inc"
#undef CUAUDIT_RUNTIME_RESULT
#undef CUAUDIT_DRIVER_RESULT
  }
  return nullptr;
}

const char* driver_name(int32_t value) {
  switch (value) {
#define CUAUDIT_RUNTIME_RESULT(value, name)
#define CUAUDIT_DRIVER_RESULT(value, name) \
  case value:                              \
    return name;
#include "cuda_result_names.inc"
#undef CUAUDIT_RUNTIME_RESULT
#undef CUAUDIT_DRIVER_RESULT
  }
  return nullptr;
}

}  // namespace

std::string result_name(Api api, int32_t result) {
  const std::string_view name = api_info(api).name;
  const char* known = name.substr(0, 4) == "cuda" ? runtime_name(result)
                      : name.substr(0, 2) == "cu" ? driver_name(result)
                                                  : (result == 0 ? "success" : nullptr);
  return known ? known : fmt::format("error {}", result);
}

}  // namespace cuaudit
