#include "sanitizer_api.h"

#include <dlfcn.h>

#include <cstdio>

namespace cuaudit::inject::sanitizer {
namespace {

template <typename F>
bool resolve(void* library, F& function, const char* name, char* error, size_t error_bytes) noexcept {
  function = reinterpret_cast<F>(dlsym(library, name));
  if (!function) snprintf(error, error_bytes, "the Sanitizer API library has no %s", name);
  return function != nullptr;
}

}  // namespace

bool load(const char* path, Api& api, char* error, size_t error_bytes) noexcept {
  void* library = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!library) {
    const char* why = dlerror();
    snprintf(error, error_bytes, "cannot load the Sanitizer API library %s: %s", path, why ? why : "unknown error");
    return false;
  }
  return resolve(library, api.subscribe, "sanitizerSubscribe", error, error_bytes) &&
         resolve(library, api.enable_domain, "sanitizerEnableDomain", error, error_bytes) &&
         resolve(library, api.add_patches_from_file, "sanitizerAddPatchesFromFile", error, error_bytes) &&
         resolve(library, api.patch_instructions, "sanitizerPatchInstructions", error, error_bytes) &&
         resolve(library, api.patch_module, "sanitizerPatchModule", error, error_bytes) &&
         resolve(library, api.alloc_host, "sanitizerAllocHost", error, error_bytes) &&
         resolve(library, api.set_launch_callback_data, "sanitizerSetLaunchCallbackData", error, error_bytes) &&
         resolve(library, api.get_function_pc_and_size, "sanitizerGetFunctionPcAndSize", error, error_bytes) &&
         resolve(library, api.get_result_string, "sanitizerGetResultString", error, error_bytes);
}

const char* result_text(const Api& api, Result result) noexcept {
  const char* text = nullptr;
  if (api.get_result_string && api.get_result_string(result, &text) == kSuccess && text) return text;
  static thread_local char number[32];
  snprintf(number, sizeof number, "Sanitizer API error %d", result);
  return number;
}

}  // namespace cuaudit::inject::sanitizer
