#include "frame_filter.h"

#include "function_names.h"

#include <algorithm>
#include <string>
#include <string_view>

namespace cuaudit {
namespace {

bool starts_with(std::string_view s, std::string_view prefix) { return s.substr(0, prefix.size()) == prefix; }

std::string_view basename_of(std::string_view path) {
  const auto slash = path.rfind('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

bool is_internal_module(std::string_view module) {
  const std::string_view name = basename_of(module);
  for (std::string_view prefix : {"libcuda.so", "libcudart.so", "libcupti.so", "libcuaudit-injection.so",
                                  "libcuaudit-preload.so", "libnvidia-", "libcudadebugger.so",
                                  // --device-heap: the Compute Sanitizer API calls the injection's callbacks
                                  "libsanitizer-public.so",
                                  // ctypes's call into the injection, from cuaudit's Python memory hook
                                  "libffi.so", "_ctypes.cpython"}) {
    if (starts_with(name, prefix)) return true;
  }
  return false;
}

bool is_internal_function(std::string_view fn) {
  if (starts_with(fn, "__cuda") || starts_with(fn, "libcudart_static_") || starts_with(fn, "cuaudit::inject::") ||
      starts_with(fn, "__device_stub__"))
    return true;
  // Runtime API entry points and the templates of cuda_runtime.h (cudaMalloc<float>(...)).
  return fn.size() > 4 && starts_with(fn, "cuda") && fn[4] >= 'A' && fn[4] <= 'Z';
}

// The runtime's and NVTX's headers, and the launch stubs nvcc generates for <<<>>> (x.cudafe1.stub.c), so
// that a launch's first frame is the <<<>>> line.
bool is_cuda_header(std::string_view file) {
  const std::string_view name = basename_of(file);
  // NVTX's header-only stubs (nvtxMemRegionsRegister's body, inlined into the caller's pool).
  if (file.find("/nvtx3/") != std::string_view::npos) return true;
  constexpr std::string_view stub = ".cudafe1.stub.c";
  return name == "cuda_runtime.h" || name == "cuda_runtime_api.h" || name == "host_runtime.h" ||
         (name.size() > stub.size() && name.substr(name.size() - stub.size()) == stub);
}

bool is_main(std::string_view fn) { return fn == "main" || starts_with(fn, "main("); }

}  // namespace

bool is_cuda_internal(const report::Frame& frame) {
  return is_internal_module(frame.module) || is_internal_function(frame.function) || is_cuda_header(frame.file);
}

std::vector<bool> internal_frames(const std::vector<report::Frame>& frames) {
  std::vector<bool> internal(frames.size());
  for (size_t i = 0; i < frames.size(); ++i) {
    internal[i] = is_cuda_internal(frames[i]) || (i > 0 && starts_with(frames[i - 1].function, "__device_stub__") &&
                                                  !frames[i].function.empty() && frames[i].function != "main");
  }
  return internal;
}

namespace {
// Index of the first frame that is the program's own, or frames.size() when there is none.
size_t first_user_index(const std::vector<report::Frame>& frames) {
  const std::vector<bool> internal = internal_frames(frames);
  size_t i = 0;
  while (i < frames.size() && internal[i]) ++i;
  return i;
}
}  // namespace

std::vector<report::Frame> user_frames(std::vector<report::Frame> frames) {
  const size_t first = first_user_index(frames);
  if (first == frames.size()) return frames;
  frames.erase(frames.begin(), frames.begin() + static_cast<std::ptrdiff_t>(first));
  auto main_frame =
      std::find_if(frames.begin(), frames.end(), [](const report::Frame& f) { return is_main(f.function); });
  if (main_frame != frames.end()) frames.erase(main_frame + 1, frames.end());
  return frames;
}

std::string called_function(const std::vector<report::Frame>& frames) {
  const size_t first = first_user_index(frames);
  if (first == 0 || first == frames.size()) return {};
  return report::short_function_name(frames[first - 1].function);
}

}  // namespace cuaudit
