#include "library_handles.h"

#include <algorithm>
#include <map>
#include <optional>
#include <string_view>
#include <tuple>

#include <fmt/format.h>

#include "frame_filter.h"
#include "function_names.h"

namespace cuaudit {
namespace {

struct HandleApi {
  std::string_view create;   // as exported, without a _v2 suffix
  std::string_view destroy;  // what releases it
  std::string_view what;     // "cuBLAS handle"
};

constexpr HandleApi kHandleApis[] = {
    {"cublasCreate", "cublasDestroy", "cuBLAS handle"},
    {"cublasLtCreate", "cublasLtDestroy", "cuBLASLt handle"},
    {"cudnnCreate", "cudnnDestroy", "cuDNN handle"},
    {"cufftCreate", "cufftDestroy", "cuFFT plan"},
    {"cufftPlan1d", "cufftDestroy", "cuFFT plan"},
    {"cufftPlan2d", "cufftDestroy", "cuFFT plan"},
    {"cufftPlan3d", "cufftDestroy", "cuFFT plan"},
    {"cufftPlanMany", "cufftDestroy", "cuFFT plan"},
    {"cusparseCreate", "cusparseDestroy", "cuSPARSE handle"},
    {"cusolverDnCreate", "cusolverDnDestroy", "cuSOLVER handle"},
    {"cusolverSpCreate", "cusolverSpDestroy", "cuSOLVER handle"},
    {"curandCreateGenerator", "curandDestroyGenerator", "cuRAND generator"},
    {"ncclCommInitRank", "ncclCommDestroy", "NCCL communicator"},
    {"ncclCommInitRankConfig", "ncclCommDestroy", "NCCL communicator"},
    {"ncclCommInitAll", "ncclCommDestroy", "NCCL communicator"},
    {"ncclCommSplit", "ncclCommDestroy", "NCCL communicator"},
};

const HandleApi* handle_api(const report::Frame& frame) {
  std::string name = report::short_function_name(frame.function);
  if (name.size() > 3 && name.compare(name.size() - 3, 3, "_v2") == 0) name.resize(name.size() - 3);
  for (const HandleApi& api : kHandleApis) {
    if (name == api.create) return &api;
  }
  return nullptr;
}

// Frameworks that create handles for themselves and keep them: known by their code's location.
struct Framework {
  std::string_view path_part;
  std::string_view name;
};
// Path parts precise enough for a virtualenv that happens to live under a directory named "torch".
constexpr Framework kFrameworks[] = {
    {"/jaxlib/", "JAX/XLA"},
    {"/jax_plugins/", "JAX/XLA"},
    {"libxla", "JAX/XLA"},
    {"xla_extension", "JAX/XLA"},
    {"libtorch", "PyTorch"},
    {"libc10", "PyTorch"},
    {"site-packages/torch/", "PyTorch"},
    {"site-packages/cupy", "CuPy"},
    {"cupy_backends", "CuPy"},
    {"libnvinfer", "TensorRT"},
    {"tensorflow", "TensorFlow"},
};

std::optional<std::string_view> framework_of(const report::Frame& frame) {
  for (const Framework& f : kFrameworks) {
    if (frame.module.find(f.path_part) != std::string::npos || frame.file.find(f.path_part) != std::string::npos) {
      return f.name;
    }
  }
  return std::nullopt;
}

// Frames compared for "the same create call site": from the create call outwards.
using Site = std::vector<std::tuple<std::string, std::string, int, std::string>>;

Site site_of(const std::vector<report::Frame>& frames) {
  Site site;
  for (const report::Frame& f : frames) site.emplace_back(f.function, f.file, f.line, f.module);
  return site;
}

std::string call_site(const std::vector<report::Frame>& frames) {
  for (size_t i = 1; i < frames.size(); ++i) {  // frames[0] is the create call itself
    const report::Frame& f = frames[i];
    if (!f.file.empty() && f.line > 0) return fmt::format("{}:{}", f.file, f.line);
    if (!f.function.empty()) return f.function;
  }
  return "an unknown place";
}

// The outermost create frame: a library's create may call another's (cuDNN's own cudnnCreate).
std::pair<size_t, const HandleApi*> create_call(const std::vector<report::Frame>& stack) {
  size_t create = stack.size();
  const HandleApi* api = nullptr;
  for (size_t i = 0; i < stack.size(); ++i) {
    if (const HandleApi* a = handle_api(stack[i])) create = i, api = a;
  }
  return {create, api};
}

}  // namespace

std::optional<HeldHandle> framework_handle(const std::vector<report::Frame>& stack) {
  const auto [create, api] = create_call(stack);
  if (!api) return std::nullopt;
  for (size_t i = create + 1; i < stack.size(); ++i) {
    if (const auto framework = framework_of(stack[i])) {
      return HeldHandle{fmt::format("{} workspace", api->what),
                        fmt::format("{} created this {} ({}) and keeps it for the life of the process", *framework,
                                    api->what, api->create)};
    }
  }
  return std::nullopt;
}

size_t create_frame(const std::vector<report::Frame>& stack) {
  const auto [create, api] = create_call(stack);
  return api ? create : 0;
}

void judge_library_handles(std::vector<report::Finding>& findings) {
  std::map<std::pair<std::string_view, Site>, size_t> merged;  // (create, site) -> index in `kept`
  std::vector<std::pair<size_t, const HandleApi*>> own;        // the program's handles, in `kept`
  std::vector<report::Finding> kept;
  kept.reserve(findings.size());
  for (report::Finding& f : findings) {
    // A framework's handle was made held_by_allocator (framework_handle): only leaks are the program's.
    const auto [create, api] =
        f.kind == report::FindingKind::Leak ? create_call(f.stack) : std::pair<size_t, const HandleApi*>{0, nullptr};
    if (!api) {
      kept.push_back(std::move(f));
      continue;
    }
    // The program's own handle: one finding per create call site, starting at the create call.
    std::vector<report::Frame> from_create(f.stack.begin() + static_cast<std::ptrdiff_t>(create), f.stack.end());
    const auto key = std::make_pair(api->create, site_of(from_create));
    if (auto it = merged.find(key); it != merged.end()) {
      report::Finding& into = kept[it->second];
      into.bytes += f.bytes;
      into.count += f.count;
      continue;
    }
    merged.emplace(key, kept.size());
    own.emplace_back(kept.size(), api);
    f.notes.insert(f.notes.begin(), fmt::format("{} at {}, never {}: the {}'s workspace lives until it is destroyed",
                                                api->create, call_site(from_create), api->destroy, api->what));
    f.notes.push_back(fmt::format(
        "a handle kept on purpose for the program's whole life is reported too, like any allocation at exit: "
        "destroy it before exit, or suppress it with `leak:{}`",
        api->create));
    f.stack = std::move(from_create);
    f.api = std::string(api->create);
    kept.push_back(std::move(f));
  }
  // Headlines last: merged findings' sizes are final now.
  for (const auto& [index, api] : own) {
    report::Finding& f = kept[index];
    f.headline = fmt::format(
        "Leak of {} byte(s) in {} allocation(s): a {} made by {} and never destroyed with {}, "
        "created at:",
        f.bytes, f.count, api->what, api->create, api->destroy);
    f.message = fmt::format(
        "a {} created by {} was never destroyed ({} was never called): its {} byte(s) of "
        "workspace in {} allocation(s) leaked",
        api->what, api->create, api->destroy, f.bytes, f.count);
  }
  findings = std::move(kept);
}

}  // namespace cuaudit
