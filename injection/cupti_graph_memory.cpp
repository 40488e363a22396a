#include "cupti_graph_memory.h"

#include "driver_api.h"
#include "event_clock.h"
#include "stack_capture.h"
#include "trace_format.h"
#include "trace_writer.h"

namespace cuaudit::inject {
namespace {

using trace::GraphChange;
using trace::GraphNodeKind;

template <typename T>
uint64_t handle(T h) noexcept {
  return reinterpret_cast<uint64_t>(h);
}

template <typename T>
uint64_t out_handle(T* out) noexcept {
  return out ? reinterpret_cast<uint64_t>(*out) : 0;
}

void record_node(Api api, GraphNodeKind kind, uint64_t graph, uint64_t node, uint64_t dptr, uint64_t bytes,
                 int32_t device) noexcept {
  trace::GraphMemNodeRecord r{};
  r.seq = next_sequence();
  r.time_ns = monotonic_ns();
  r.stack_id = capture_stack();
  r.graph = graph;
  r.node = node;
  r.dptr = dptr;
  r.bytes = bytes;
  r.tid = current_tid();
  r.device = device;
  r.api = static_cast<uint16_t>(api);
  r.kind = static_cast<uint8_t>(kind);
  trace_writer().append(r);
}

void record_change(GraphChange change, uint64_t graph, uint64_t original, uint64_t exec, uint64_t flags) noexcept {
  trace::GraphChangeRecord r{};
  r.seq = next_sequence();
  r.change = static_cast<uint32_t>(change);
  r.graph = graph;
  r.original = original;
  r.exec = exec;
  r.flags = flags;
  trace_writer().append(r);
}

void record_launch(uint64_t exec, int32_t result) noexcept {
  trace::GraphLaunchRecord r{};
  r.seq = next_sequence();
  r.time_ns = monotonic_ns();
  r.exec = exec;
  r.tid = current_tid();
  r.result = result;
  trace_writer().append(r);
}

int32_t device_of(const CUmemLocation& location) noexcept {
  return location.type == CU_MEM_LOCATION_TYPE_DEVICE ? location.id : trace::kUnknownDevice;
}
int32_t device_of(const cudaMemLocation& location) noexcept {
  return location.type == cudaMemLocationTypeDevice ? location.id : trace::kUnknownDevice;
}

// The generic node APIs (cudaGraphAddNode, cuGraphAddNode): the runtime's parameter union has the
// driver's layout.
static_assert(sizeof(cudaGraphNodeParams) == sizeof(CUgraphNodeParams));
void record_generic_node(bool runtime, uint64_t graph, uint64_t node, const CUgraphNodeParams* p) noexcept {
  if (!p) return;
  if (p->type == CU_GRAPH_NODE_TYPE_MEM_ALLOC) {
    record_node(runtime ? Api::cudaGraphAddMemAllocNode : Api::cuGraphAddMemAllocNode, GraphNodeKind::Alloc, graph,
                node, p->alloc.dptr, p->alloc.bytesize, device_of(p->alloc.poolProps.location));
  } else if (p->type == CU_GRAPH_NODE_TYPE_MEM_FREE) {
    record_node(runtime ? Api::cudaGraphAddMemFreeNode : Api::cuGraphAddMemFreeNode, GraphNodeKind::Free, graph, node,
                p->free.dptr, 0, trace::kUnknownDevice);
  }
}

void on_runtime_graph_call(CUpti_CallbackId cbid, const void* params, bool exit_ok) noexcept {
  switch (cbid) {
    case CUPTI_RUNTIME_TRACE_CBID_cudaGraphAddMemAllocNode_v11040: {
      auto* p = static_cast<const cudaGraphAddMemAllocNode_v11040_params*>(params);
      if (exit_ok && p->nodeParams)
        record_node(Api::cudaGraphAddMemAllocNode, GraphNodeKind::Alloc, handle(p->graph), out_handle(p->pGraphNode),
                    handle(p->nodeParams->dptr), p->nodeParams->bytesize, device_of(p->nodeParams->poolProps.location));
      return;
    }
    case CUPTI_RUNTIME_TRACE_CBID_cudaGraphAddMemFreeNode_v11040: {
      auto* p = static_cast<const cudaGraphAddMemFreeNode_v11040_params*>(params);
      if (exit_ok)
        record_node(Api::cudaGraphAddMemFreeNode, GraphNodeKind::Free, handle(p->graph), out_handle(p->pGraphNode),
                    handle(p->dptr), 0, trace::kUnknownDevice);
      return;
    }
    case CUPTI_RUNTIME_TRACE_CBID_cudaGraphAddNode_v12030: {
      auto* p = static_cast<const cudaGraphAddNode_v12030_params*>(params);
      if (exit_ok)
        record_generic_node(true, handle(p->graph), out_handle(p->pGraphNode),
                            reinterpret_cast<const CUgraphNodeParams*>(p->nodeParams));
      return;
    }
    case CUPTI_RUNTIME_TRACE_CBID_cudaGraphInstantiate_v12000: {
      auto* p = static_cast<const cudaGraphInstantiate_v12000_params*>(params);
      if (exit_ok) record_change(GraphChange::ExecCreated, handle(p->graph), 0, out_handle(p->pGraphExec), p->flags);
      return;
    }
    case CUPTI_RUNTIME_TRACE_CBID_cudaGraphInstantiateWithFlags_v11040: {
      auto* p = static_cast<const cudaGraphInstantiateWithFlags_v11040_params*>(params);
      if (exit_ok) record_change(GraphChange::ExecCreated, handle(p->graph), 0, out_handle(p->pGraphExec), p->flags);
      return;
    }
    case CUPTI_RUNTIME_TRACE_CBID_cudaGraphInstantiateWithParams_v12000:
    case CUPTI_RUNTIME_TRACE_CBID_cudaGraphInstantiateWithParams_ptsz_v12000: {
      auto* p = static_cast<const cudaGraphInstantiateWithParams_v12000_params*>(params);
      if (exit_ok)
        record_change(GraphChange::ExecCreated, handle(p->graph), 0, out_handle(p->pGraphExec),
                      p->instantiateParams ? p->instantiateParams->flags : 0);
      return;
    }
    case CUPTI_RUNTIME_TRACE_CBID_cudaGraphClone_v10000: {
      auto* p = static_cast<const cudaGraphClone_v10000_params*>(params);
      if (exit_ok) record_change(GraphChange::GraphCloned, out_handle(p->pGraphClone), handle(p->originalGraph), 0, 0);
      return;
    }
    case CUPTI_RUNTIME_TRACE_CBID_cudaGraphDestroy_v10000:
      if (exit_ok)
        record_change(GraphChange::GraphDestroyed,
                      handle(static_cast<const cudaGraphDestroy_v10000_params*>(params)->graph), 0, 0, 0);
      return;
    case CUPTI_RUNTIME_TRACE_CBID_cudaGraphExecDestroy_v10000:
      if (exit_ok)
        record_change(GraphChange::ExecDestroyed, 0, 0,
                      handle(static_cast<const cudaGraphExecDestroy_v10000_params*>(params)->graphExec), 0);
      return;
    default:
      return;
  }
}

void on_driver_graph_call(CUpti_CallbackId cbid, const void* params, bool exit_ok) noexcept {
  switch (cbid) {
    case CUPTI_DRIVER_TRACE_CBID_cuGraphAddMemAllocNode: {
      auto* p = static_cast<const cuGraphAddMemAllocNode_params*>(params);
      if (exit_ok && p->nodeParams)
        record_node(Api::cuGraphAddMemAllocNode, GraphNodeKind::Alloc, handle(p->hGraph), out_handle(p->phGraphNode),
                    p->nodeParams->dptr, p->nodeParams->bytesize, device_of(p->nodeParams->poolProps.location));
      return;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuGraphAddMemFreeNode: {
      auto* p = static_cast<const cuGraphAddMemFreeNode_params*>(params);
      if (exit_ok)
        record_node(Api::cuGraphAddMemFreeNode, GraphNodeKind::Free, handle(p->hGraph), out_handle(p->phGraphNode),
                    p->dptr, 0, trace::kUnknownDevice);
      return;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuGraphAddNode: {
      auto* p = static_cast<const cuGraphAddNode_params*>(params);
      if (exit_ok) record_generic_node(false, handle(p->hGraph), out_handle(p->phGraphNode), p->nodeParams);
      return;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuGraphAddNode_v2: {
      auto* p = static_cast<const cuGraphAddNode_v2_params*>(params);
      if (exit_ok) record_generic_node(false, handle(p->hGraph), out_handle(p->phGraphNode), p->nodeParams);
      return;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiate_v2: {
      auto* p = static_cast<const cuGraphInstantiate_v2_params*>(params);
      if (exit_ok) record_change(GraphChange::ExecCreated, handle(p->hGraph), 0, out_handle(p->phGraphExec), 0);
      return;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiateWithFlags: {
      auto* p = static_cast<const cuGraphInstantiateWithFlags_params*>(params);
      if (exit_ok) record_change(GraphChange::ExecCreated, handle(p->hGraph), 0, out_handle(p->phGraphExec), p->flags);
      return;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiateWithParams:
    case CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiateWithParams_ptsz: {
      auto* p = static_cast<const cuGraphInstantiateWithParams_params*>(params);
      if (exit_ok)
        record_change(GraphChange::ExecCreated, handle(p->hGraph), 0, out_handle(p->phGraphExec),
                      p->instantiateParams ? p->instantiateParams->flags : 0);
      return;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuGraphClone: {
      auto* p = static_cast<const cuGraphClone_params*>(params);
      if (exit_ok) record_change(GraphChange::GraphCloned, out_handle(p->phGraphClone), handle(p->originalGraph), 0, 0);
      return;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuGraphDestroy:
      if (exit_ok)
        record_change(GraphChange::GraphDestroyed, handle(static_cast<const cuGraphDestroy_params*>(params)->hGraph), 0,
                      0, 0);
      return;
    case CUPTI_DRIVER_TRACE_CBID_cuGraphExecDestroy:
      if (exit_ok)
        record_change(GraphChange::ExecDestroyed, 0, 0,
                      handle(static_cast<const cuGraphExecDestroy_params*>(params)->hGraphExec), 0);
      return;
    default:
      return;
  }
}

}  // namespace

void on_graph_call(CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const CUpti_CallbackData* data,
                   int runtime_depth) noexcept {
  const bool runtime = domain == CUPTI_CB_DOMAIN_RUNTIME_API;
  const bool at_exit = data->callbackSite == CUPTI_API_EXIT && data->functionParams && data->functionReturnValue;
  const int32_t result = !at_exit  ? -1
                         : runtime ? static_cast<int32_t>(*static_cast<const cudaError_t*>(data->functionReturnValue))
                                   : static_cast<int32_t>(*static_cast<const CUresult*>(data->functionReturnValue));
  if (runtime && (cbid == CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000 ||
                  cbid == CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_ptsz_v10000)) {
    if (at_exit)
      record_launch(handle(static_cast<const cudaGraphLaunch_v10000_params*>(data->functionParams)->graphExec), result);
    return;
  }
  if (!runtime &&
      (cbid == CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch || cbid == CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz)) {
    // The runtime's cudaGraphLaunch makes this call for the program: recorded there.
    if (at_exit && runtime_depth == 0)
      record_launch(handle(static_cast<const cuGraphLaunch_params*>(data->functionParams)->hGraph), result);
    return;
  }
  const bool exit_ok = at_exit && result == 0;
  if (runtime) {
    on_runtime_graph_call(cbid, data->functionParams, exit_ok);
  } else if (runtime_depth == 0) {  // else the runtime's own driver call for a runtime call recorded above
    on_driver_graph_call(cbid, data->functionParams, exit_ok);
  }
}

bool record_if_captured(Api api, uint64_t stream, uint64_t dptr, uint64_t bytes, int32_t device) noexcept {
  if (!driver().stream_get_capture_info) return false;
  CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
  cuuint64_t id = 0;
  CUgraph graph = nullptr;
  if (driver().stream_get_capture_info(reinterpret_cast<CUstream>(stream), &status, &id, &graph, nullptr, nullptr,
                                       nullptr) != CUDA_SUCCESS ||
      status != CU_STREAM_CAPTURE_STATUS_ACTIVE)
    return false;
  const bool alloc = api_info(api).role == ApiRole::Alloc;
  const bool runtime = api_info(api).name.substr(0, 4) == "cuda";
  const Api captured = alloc ? (runtime ? Api::cudaMallocAsyncCaptured : Api::cuMemAllocAsyncCaptured)
                             : (runtime ? Api::cudaFreeAsyncCaptured : Api::cuMemFreeAsyncCaptured);
  record_node(captured, alloc ? GraphNodeKind::Alloc : GraphNodeKind::Free, handle(graph), 0, dptr, alloc ? bytes : 0,
              device);
  return true;
}

}  // namespace cuaudit::inject
