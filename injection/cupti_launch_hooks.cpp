#include "cupti_launch_hooks.h"

#include <atomic>

#include "launch_checker.h"

namespace cuaudit::inject {

bool copies_graph_nodes(CUpti_CallbackDomain domain, CUpti_CallbackId cbid) noexcept {
  if (domain == CUPTI_CB_DOMAIN_RUNTIME_API) {
    switch (cbid) {
      case CUPTI_RUNTIME_TRACE_CBID_cudaGraphInstantiate_v10000:
      case CUPTI_RUNTIME_TRACE_CBID_cudaGraphInstantiate_v12000:
      case CUPTI_RUNTIME_TRACE_CBID_cudaGraphInstantiateWithFlags_v11040:
      case CUPTI_RUNTIME_TRACE_CBID_cudaGraphInstantiateWithParams_v12000:
      case CUPTI_RUNTIME_TRACE_CBID_cudaGraphInstantiateWithParams_ptsz_v12000:
      case CUPTI_RUNTIME_TRACE_CBID_cudaGraphClone_v10000:
      case CUPTI_RUNTIME_TRACE_CBID_cudaGraphAddChildGraphNode_v10000:
      case CUPTI_RUNTIME_TRACE_CBID_cudaGraphExecUpdate_v10020:
        return true;
      default:
        return false;
    }
  }
  switch (cbid) {
    case CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiate:
    case CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiate_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiateWithFlags:
    case CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiateWithParams:
    case CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiateWithParams_ptsz:
    case CUPTI_DRIVER_TRACE_CBID_cuGraphClone:
      return true;
    default:
      return false;
  }
}

using trace::LaunchPath;

// Runtime calls that pass kernel arguments: checked at ENTER, before the launch runs.
// Returns true when `cbid` is one of them.
bool on_runtime_launch(CuptiThreadState& tls, CUpti_CallbackId cbid, const CUpti_CallbackData* data) noexcept {
  const void* params = data->functionParams;
  const bool enter = data->callbackSite == CUPTI_API_ENTER;
  switch (cbid) {
    case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000:
    case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_ptsz_v7000:
    case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_v9000:
    case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_ptsz_v9000:
    case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_v11060:
    case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_ptsz_v11060:
    case CUPTI_RUNTIME_TRACE_CBID_cudaGraphKernelNodeSetParams_v10000:
    case CUPTI_RUNTIME_TRACE_CBID_cudaGraphExecKernelNodeSetParams_v10010:
      break;
    case CUPTI_RUNTIME_TRACE_CBID_cudaGraphAddKernelNode_v10000:
      tls.adding_nodes = enter ? LaunchPath::cudaGraphAddKernelNode : LaunchPath::cuGraphAddKernelNode;
      return false;
    case CUPTI_RUNTIME_TRACE_CBID_cudaGraphAddNode_v12020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaGraphAddNode_v12030:
      tls.adding_nodes = enter ? LaunchPath::cudaGraphAddNode : LaunchPath::cuGraphAddKernelNode;
      return false;
    default:
      return false;
  }
  tls.in_runtime_launch = enter;
  if (!params) return true;
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
  return true;
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

// Driver calls that pass kernel arguments. Every runtime launch makes one of these too (nested),
// so their callbacks double the cost of every launch: they are enabled only once the program
// itself takes hold of a kernel handle the driver API can launch (below).
static constexpr CUpti_CallbackId kDriverLaunchCbids[] = {
    CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuGraphKernelNodeSetParams_v2,
    CUPTI_DRIVER_TRACE_CBID_cuGraphExecKernelNodeSetParams_v2,
};

// Rare driver calls, always enabled: those that copy graph nodes, and those that hand the program
// a kernel handle (the runtime makes them too, inside its own calls; the program's own use means
// it may launch through the driver API).
static constexpr CUpti_CallbackId kDriverGraphCopyCbids[] = {
    CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiate,
    CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiate_v2,
    CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiateWithFlags,
    CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiateWithParams,
    CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiateWithParams_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuGraphClone,
};
static constexpr CUpti_CallbackId kDriverHandleCbids[] = {
    CUPTI_DRIVER_TRACE_CBID_cuModuleGetFunction, CUPTI_DRIVER_TRACE_CBID_cuModuleEnumerateFunctions,
    CUPTI_DRIVER_TRACE_CBID_cuLibraryGetKernel,  CUPTI_DRIVER_TRACE_CBID_cuLibraryEnumerateKernels,
    CUPTI_DRIVER_TRACE_CBID_cuKernelGetFunction,
};

void enable_driver_launch_checks(CUpti_SubscriberHandle subscriber) noexcept {
  static std::atomic<bool> enabled{false};
  if (enabled.exchange(true)) return;
  for (CUpti_CallbackId cbid : kDriverLaunchCbids) cuptiEnableCallback(1, subscriber, CUPTI_CB_DOMAIN_DRIVER_API, cbid);
}

namespace {
int32_t device_of_context(CUcontext context) noexcept {
  uint32_t device = 0;
  return context && cuptiGetDeviceId(context, &device) == CUPTI_SUCCESS ? static_cast<int32_t>(device) : -1;
}
}  // namespace

bool on_peer_access_call(CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const CUpti_CallbackData* data) noexcept {
  const bool runtime = domain == CUPTI_CB_DOMAIN_RUNTIME_API;
  const bool enable = runtime ? cbid == CUPTI_RUNTIME_TRACE_CBID_cudaDeviceEnablePeerAccess_v4000
                              : cbid == CUPTI_DRIVER_TRACE_CBID_cuCtxEnablePeerAccess;
  const bool disable = runtime ? cbid == CUPTI_RUNTIME_TRACE_CBID_cudaDeviceDisablePeerAccess_v4000
                               : cbid == CUPTI_DRIVER_TRACE_CBID_cuCtxDisablePeerAccess;
  if (!enable && !disable) return false;
  if (data->callbackSite != CUPTI_API_EXIT || !data->functionParams || !data->functionReturnValue) return true;
  // Success, or "already enabled" / "not enabled" (704, 705): the state the program asked for holds.
  const int rc = runtime ? static_cast<int>(*static_cast<const cudaError_t*>(data->functionReturnValue))
                         : static_cast<int>(*static_cast<const CUresult*>(data->functionReturnValue));
  if (rc != 0 && rc != 704 && rc != 705) return true;
  const int32_t from = device_of_context(data->context);
  int32_t to = -1;
  if (runtime) {
    to = enable ? static_cast<const cudaDeviceEnablePeerAccess_v4000_params*>(data->functionParams)->peerDevice
                : static_cast<const cudaDeviceDisablePeerAccess_v4000_params*>(data->functionParams)->peerDevice;
  } else {
    to = device_of_context(enable ? static_cast<const cuCtxEnablePeerAccess_params*>(data->functionParams)->peerContext
                                  : static_cast<const cuCtxDisablePeerAccess_params*>(data->functionParams)->peerContext);
  }
  note_peer_access(from, to, enable);
  return true;
}

void enable_launch_hook_callbacks(CUpti_SubscriberHandle subscriber) noexcept {
  cuptiEnableCallback(1, subscriber, CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuCtxEnablePeerAccess);
  cuptiEnableCallback(1, subscriber, CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuCtxDisablePeerAccess);
  for (CUpti_CallbackId cbid : kDriverGraphCopyCbids)
    cuptiEnableCallback(1, subscriber, CUPTI_CB_DOMAIN_DRIVER_API, cbid);
  for (CUpti_CallbackId cbid : kDriverHandleCbids) cuptiEnableCallback(1, subscriber, CUPTI_CB_DOMAIN_DRIVER_API, cbid);
  cuptiEnableCallback(1, subscriber, CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED);
}

void on_graph_node_created(const CuptiThreadState& tls, const CUpti_GraphData* graph) noexcept {
  // A kernel node added explicitly; one made by stream capture was checked at its launch.
  if (!tls.in_runtime_launch && !tls.copying_nodes && graph && graph->nodeType == CU_GRAPH_NODE_TYPE_KERNEL &&
      !graph->originalNode && !graph->graphExec)
    check_graph_node(tls.adding_nodes, graph->node);
}

// The program took a kernel handle it could give to cuLaunchKernel: from the driver API
// (cuModuleGetFunction, cuLibraryGetKernel, ...) or from the runtime (cudaGetFuncBySymbol,
// cudaGetKernel, cudaLibraryGetKernel).
bool hands_out_kernel_handles(const CuptiThreadState& tls, CUpti_CallbackDomain domain,
                              CUpti_CallbackId cbid) noexcept {
  if (domain == CUPTI_CB_DOMAIN_RUNTIME_API) {
    return cbid == CUPTI_RUNTIME_TRACE_CBID_cudaGetFuncBySymbol_v11000 ||
           cbid == CUPTI_RUNTIME_TRACE_CBID_cudaGetKernel_v12000 ||
           cbid == CUPTI_RUNTIME_TRACE_CBID_cudaLibraryGetKernel_v12060 ||
           cbid == CUPTI_RUNTIME_TRACE_CBID_cudaLibraryEnumerateKernels_v12060;
  }
  for (CUpti_CallbackId c : kDriverHandleCbids) {
    if (c == cbid) return tls.runtime_depth == 0;
  }
  return false;
}

}  // namespace cuaudit::inject
