#include "cupti_launch_hooks.h"

#include <atomic>

#include "cupti_callback_table.h"
#include "launch_checker.h"

namespace cuaudit::inject {

using trace::LaunchPath;

void on_graph_node_add(CuptiThreadState& tls, CUpti_CallbackId cbid, bool enter) noexcept {
  const LaunchPath path = cbid == CUPTI_RUNTIME_TRACE_CBID_cudaGraphAddKernelNode_v10000
                              ? LaunchPath::cudaGraphAddKernelNode
                              : LaunchPath::cudaGraphAddNode;
  tls.adding_nodes = enter ? path : LaunchPath::cuGraphAddKernelNode;
}

// Runtime calls that pass kernel arguments: checked at ENTER, before the launch runs.
void on_runtime_launch(CuptiThreadState& tls, CUpti_CallbackId cbid, const CUpti_CallbackData* data) noexcept {
  const void* params = data->functionParams;
  const bool enter = data->callbackSite == CUPTI_API_ENTER;
  tls.in_runtime_launch = enter;
  if (!params) return;
  switch (cbid) {
    case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000:
    case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_ptsz_v7000: {
      auto* p = static_cast<const cudaLaunchKernel_v7000_params*>(params);
      if (enter) check_launch(LaunchPath::cudaLaunchKernel, p->func, data->symbolName, p->args, nullptr);
      break;
    }
    case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_v9000:
    case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_ptsz_v9000: {
      auto* p = static_cast<const cudaLaunchCooperativeKernel_v9000_params*>(params);
      if (enter) check_launch(LaunchPath::cudaLaunchCooperativeKernel, p->func, data->symbolName, p->args, nullptr);
      break;
    }
    case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_v11060:
    case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_ptsz_v11060: {
      auto* p = static_cast<const cudaLaunchKernelExC_v11060_params*>(params);
      if (enter) check_launch(LaunchPath::cudaLaunchKernelExC, p->func, data->symbolName, p->args, nullptr);
      break;
    }
    case CUPTI_RUNTIME_TRACE_CBID_cudaGraphKernelNodeSetParams_v10000: {
      // The node's new arguments are read back from the driver once they are set.
      auto* p = static_cast<const cudaGraphKernelNodeSetParams_v10000_params*>(params);
      if (!enter && data->functionReturnValue &&
          *static_cast<const cudaError_t*>(data->functionReturnValue) == cudaSuccess)
        check_graph_node(LaunchPath::cudaGraphKernelNodeSetParams, reinterpret_cast<CUgraphNode>(p->node));
      break;
    }
    case CUPTI_RUNTIME_TRACE_CBID_cudaGraphExecKernelNodeSetParams_v10010: {
      auto* p = static_cast<const cudaGraphExecKernelNodeSetParams_v10010_params*>(params);
      if (enter && p->pNodeParams)
        check_graph_exec_update(LaunchPath::cudaGraphExecKernelNodeSetParams, reinterpret_cast<CUgraphNode>(p->node),
                                nullptr, p->pNodeParams->kernelParams, p->pNodeParams->extra);
      break;
    }
    default:
      break;
  }
}

// Driver launches made by the program itself (not on behalf of a runtime launch).
void on_driver_launch(const CuptiThreadState& tls, CUpti_CallbackId cbid, const CUpti_CallbackData* data) noexcept {
  if (tls.in_runtime_launch || !data->functionParams) return;
  const void* params = data->functionParams;
  const bool enter = data->callbackSite == CUPTI_API_ENTER;
  switch (cbid) {
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz: {
      auto* p = static_cast<const cuLaunchKernel_params*>(params);
      if (enter) check_launch(LaunchPath::cuLaunchKernel, p->f, data->symbolName, p->kernelParams, p->extra);
      break;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz: {
      auto* p = static_cast<const cuLaunchKernelEx_params*>(params);
      if (enter) check_launch(LaunchPath::cuLaunchKernelEx, p->f, data->symbolName, p->kernelParams, p->extra);
      break;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz: {
      auto* p = static_cast<const cuLaunchCooperativeKernel_params*>(params);
      if (enter) check_launch(LaunchPath::cuLaunchCooperativeKernel, p->f, data->symbolName, p->kernelParams, nullptr);
      break;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuGraphKernelNodeSetParams_v2: {
      auto* p = static_cast<const cuGraphKernelNodeSetParams_v2_params*>(params);
      if (!enter && data->functionReturnValue &&
          *static_cast<const CUresult*>(data->functionReturnValue) == CUDA_SUCCESS)
        check_graph_node(LaunchPath::cuGraphKernelNodeSetParams, p->hNode);
      break;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuGraphExecKernelNodeSetParams_v2: {
      auto* p = static_cast<const cuGraphExecKernelNodeSetParams_v2_params*>(params);
      if (enter && p->nodeParams)
        check_graph_exec_update(LaunchPath::cuGraphExecKernelNodeSetParams, p->hNode, p->nodeParams->func,
                                p->nodeParams->kernelParams, p->nodeParams->extra);
      break;
    }
    default:
      break;
  }
}

// Every runtime launch makes a driver launch too (nested), so the driver launch callbacks would
// double the cost of every launch: they are enabled only once the program itself takes hold of a
// kernel handle the driver API can launch (the KernelHandle callbacks).
void enable_driver_launch_checks(CUpti_SubscriberHandle subscriber) noexcept {
  static std::atomic<bool> enabled{false};
  if (enabled.exchange(true)) return;
  for (size_t i = 0; i < callback_row_count(); ++i) {
    const CallbackRow& row = callback_rows()[i];
    if (row.roles & callback_role::DriverLaunch) cuptiEnableCallback(1, subscriber, row.domain, row.cbid);
  }
}

namespace {
int32_t device_of_context(CUcontext context) noexcept {
  uint32_t device = 0;
  return context && cuptiGetDeviceId(context, &device) == CUPTI_SUCCESS ? static_cast<int32_t>(device) : -1;
}
}  // namespace

void on_peer_access_call(CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const CUpti_CallbackData* data) noexcept {
  const bool runtime = domain == CUPTI_CB_DOMAIN_RUNTIME_API;
  const bool enable = runtime ? cbid == CUPTI_RUNTIME_TRACE_CBID_cudaDeviceEnablePeerAccess_v4000
                              : cbid == CUPTI_DRIVER_TRACE_CBID_cuCtxEnablePeerAccess;
  if (data->callbackSite != CUPTI_API_EXIT || !data->functionParams || !data->functionReturnValue) return;
  // Success, or "already enabled" / "not enabled" (704, 705): the state the program asked for holds.
  const int rc = runtime ? static_cast<int>(*static_cast<const cudaError_t*>(data->functionReturnValue))
                         : static_cast<int>(*static_cast<const CUresult*>(data->functionReturnValue));
  if (rc != 0 && rc != 704 && rc != 705) return;
  const int32_t from = device_of_context(data->context);
  int32_t to = -1;
  if (runtime) {
    to = enable ? static_cast<const cudaDeviceEnablePeerAccess_v4000_params*>(data->functionParams)->peerDevice
                : static_cast<const cudaDeviceDisablePeerAccess_v4000_params*>(data->functionParams)->peerDevice;
  } else {
    to = device_of_context(enable
                               ? static_cast<const cuCtxEnablePeerAccess_params*>(data->functionParams)->peerContext
                               : static_cast<const cuCtxDisablePeerAccess_params*>(data->functionParams)->peerContext);
  }
  note_peer_access(from, to, enable);
}

void on_graph_node_created(const CuptiThreadState& tls, const CUpti_GraphData* graph) noexcept {
  // A kernel node added explicitly; one made by stream capture was checked at its launch.
  if (!tls.in_runtime_launch && !tls.copying_nodes && graph && graph->nodeType == CU_GRAPH_NODE_TYPE_KERNEL &&
      !graph->originalNode && !graph->graphExec)
    check_graph_node(tls.adding_nodes, graph->node);
}

}  // namespace cuaudit::inject
