// The launch checks for CUDA graphs' kernel nodes: checked when a node is created or updated, since
// cudaGraphLaunch gives no per-kernel callback (../shared/GPU.md).
#include <cuda.h>

#include "driver_api.h"
#include "launch_checker.h"

namespace cuaudit::inject {
namespace {

// A graph node's kernel: its handle and name.
bool node_kernel(CUgraphNode node, CUDA_KERNEL_NODE_PARAMS& p, const void*& handle, const char*& name) noexcept {
  const DriverApi& d = driver();
  if (!d.graph_kernel_node_get_params || d.graph_kernel_node_get_params(node, &p) != CUDA_SUCCESS) return false;
  name = nullptr;
  if (p.func) {
    handle = p.func;
    if (d.func_get_name) d.func_get_name(&name, p.func);
  } else if (p.kern) {
    handle = p.kern;
    if (d.kernel_get_name) d.kernel_get_name(&name, p.kern);
  } else {
    return false;
  }
  return true;
}

}  // namespace

void check_graph_node(trace::LaunchPath path, CUgraphNode node) noexcept {
  CUDA_KERNEL_NODE_PARAMS p{};
  const void* handle = nullptr;
  const char* name = nullptr;
  if (!node_kernel(node, p, handle, name)) return;
  check_kernel_arguments(path, handle, name, p.func != nullptr, p.kernelParams, p.extra);
}

void check_graph_exec_update(trace::LaunchPath path, CUgraphNode node, CUfunction function, void* const* params,
                             void* const* extra) noexcept {
  CUDA_KERNEL_NODE_PARAMS p{};
  const void* handle = function;
  const char* name = nullptr;
  if (function) {
    if (driver().func_get_name) driver().func_get_name(&name, function);
  } else if (!node_kernel(node, p, handle, name)) {
    return;
  }
  check_kernel_arguments(path, handle, name, true, params, extra);
}

}  // namespace cuaudit::inject
