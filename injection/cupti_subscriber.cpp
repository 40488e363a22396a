#include "cupti_subscriber.h"

#include <cupti.h>

#include <atomic>
#include <cstdio>
#include <cstring>

#include "call_recorder.h"
#include "cupti_api_params.h"
#include "cupti_callback_table.h"
#include "cupti_graph_memory.h"
#include "cupti_launch_hooks.h"
#include "cupti_unified_memory.h"
#include "device_state.h"
#include "driver_api.h"
#include "kernel_code.h"
#include "launch_checker.h"
#include "memory_sampler.h"
#include "pool_recorder.h"
#include "preload_link.h"
#include "stage_stats.h"
#include "trace_writer.h"

namespace cuaudit::inject {
namespace {

CUpti_SubscriberHandle g_subscriber = nullptr;
bool g_record_call_sites = false;  // --check-api-results
bool g_check_launches = true;      // --check-launch-params

// One thread_local for all of the callbacks' per-thread state: every CUDA call comes through here
// twice, and each thread_local costs a lookup (__tls_get_addr) in a library loaded with dlopen:
// the callback looks it up once and hands it down.
thread_local CuptiThreadState tls_state;

// Device ordinal of a context, cached for the last context this thread asked about.
int32_t device_of(CUcontext context, uint32_t context_uid) noexcept {
  thread_local uint32_t cached_uid = 0;
  thread_local int32_t cached_device = trace::kUnknownDevice;
  if (!context) return trace::kUnknownDevice;
  if (context_uid != 0 && context_uid == cached_uid) return cached_device;
  uint32_t device = 0;
  if (cuptiGetDeviceId(context, &device) != CUPTI_SUCCESS) return trace::kUnknownDevice;
  cached_uid = context_uid;
  cached_device = static_cast<int32_t>(device);
  return cached_device;
}

// Every other runtime call: only what it returned matters, and only at exit. Failures are rare
// and recorded with their stack; successes cost a load and a compare (unless call sites are
// recorded for --check-api-results).
void on_other_runtime_call(CUpti_CallbackId cbid, const CUpti_CallbackData* data, CallbackRoute route) noexcept {
  if (data->callbackSite != CUPTI_API_EXIT || !data->functionReturnValue) return;
  const StageTimer timer(Stage::OtherRuntimeCall);
  const auto result = static_cast<int32_t>(*static_cast<const cudaError_t*>(data->functionReturnValue));
  const uint32_t domain = CUPTI_CB_DOMAIN_RUNTIME_API;
  if (route.has(callback_role::LastError)) {
    if (result != cudaSuccess) on_runtime_call(CallFact::LastError, domain, cbid, data->functionName, result);
    return;
  }
  if (result != cudaSuccess) {
    // Polling (cudaStreamQuery, cudaEventQuery) answers "not yet" this way: not a failure, and
    // frequent enough to flood the trace.
    if (result == cudaErrorNotReady) return;
    uint64_t pointers[2];
    const bool copy = data->functionParams && copy_pointers(cbid, data->functionParams, pointers);
    on_runtime_call(CallFact::Failed, domain, cbid, data->functionName, result, copy ? &pointers : nullptr);
    return;
  }
  if (g_record_call_sites) on_runtime_call(CallFact::Site, domain, cbid, data->functionName, result);
}

// The size of memory another process exported: the import call does not say.
uint64_t mapped_bytes(uint64_t pointer) noexcept {
  CUdeviceptr base = 0;
  size_t bytes = 0;
  if (!driver().mem_get_address_range || driver().mem_get_address_range(&base, &bytes, pointer) != CUDA_SUCCESS)
    return 0;
  return bytes;
}

// The hooks a callback's roles call for (cupti_callbacks.inc). Returns true when the callback is
// done with: a driver call that is only a hook's, or a runtime launch at ENTER.
bool run_hooks(CuptiThreadState& tls, CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
               const CUpti_CallbackData* data, CallbackRoute route) noexcept {
  using namespace callback_role;
  const bool driver = domain == CUPTI_CB_DOMAIN_DRIVER_API;
  const bool enter = data->callbackSite == CUPTI_API_ENTER;
  const bool hook_only = driver && route.api == kNoApi;
  if (route.has(GraphMemory)) on_graph_call(domain, cbid, data, tls.runtime_depth);
  // The program's own export (a driver call inside a runtime call is the runtime's).
  if (route.has(Export) && !enter && (!driver || tls.runtime_depth == 0) && data->functionReturnValue &&
      *static_cast<const int32_t*>(data->functionReturnValue) == 0) {
    uint64_t pointer = 0, hash = 0;
    if (exported_memory(domain, cbid, data->functionParams, pointer, hash)) on_memory_exported(pointer, hash);
  }
  if (!g_check_launches || !(route.roles & kLaunchHooks)) return hook_only;
  if (route.has(Peer)) on_peer_access_call(domain, cbid, data);
  if (route.has(NodeCopy)) tls.copying_nodes = enter;
  if (route.has(NodeAdd)) on_graph_node_add(tls, cbid, enter);
  // The program took a kernel handle it could give to cuLaunchKernel: driver launches are checked
  // from now on (the runtime's own driver calls inside its calls are not the program's).
  if (route.has(KernelHandle) && enter && (!driver || tls.runtime_depth == 0))
    enable_driver_launch_checks(g_subscriber);
  if (route.has(Launch)) {
    on_runtime_launch(tls, cbid, data);
    if (enter) return true;
  }
  if (route.has(DriverLaunch)) on_driver_launch(tls, cbid, data);
  return hook_only;
}

void on_api(CuptiThreadState& tls, CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
            const CUpti_CallbackData* data) noexcept {
  if (!data) return;
  const CallbackRoute route = callback_route(domain, cbid);
  const bool program_driver_call = domain == CUPTI_CB_DOMAIN_DRIVER_API && tls.runtime_depth == 0;
  if ((route.roles & ~(callback_role::Tracked | callback_role::Resource)) != 0 &&
      run_hooks(tls, domain, cbid, data, route))
    return;
  if (route.api == kNoApi) {
    if (domain == CUPTI_CB_DOMAIN_RUNTIME_API) on_other_runtime_call(cbid, data, route);
    return;
  }
  const Api api = static_cast<Api>(route.api);
  // The runtime's own driver calls inside an untracked runtime call (modules it loads lazily,
  // streams it makes for itself): the program did not make them.
  if (domain == CUPTI_CB_DOMAIN_DRIVER_API && !program_driver_call && is_resource(api_info(api).family)) return;
  if (data->callbackSite == CUPTI_API_ENTER) {
    on_call_enter(api);
    return;
  }
  const StageTimer timer(Stage::TrackedCall);
  ApiCall call{api};
  if (data->functionReturnValue) {
    call.result = domain == CUPTI_CB_DOMAIN_RUNTIME_API
                      ? static_cast<int32_t>(*static_cast<const cudaError_t*>(data->functionReturnValue))
                      : static_cast<int32_t>(*static_cast<const CUresult*>(data->functionReturnValue));
  }
  decode_api_params(api, data->functionParams, call);
  const MemoryFamily family = api_info(api).family;
  if (call.result == 0 && call.bytes == 0 &&
      (family == MemoryFamily::IpcMapping || family == MemoryFamily::ImportedPool))
    call.bytes = mapped_bytes(call.key);
  call.context_uid = data->contextUid;
  call.device = device_of(data->context, data->contextUid);
  // Stream capture turns a stream-ordered allocation or release into a memory node of a graph.
  if (call.result == 0 && family == MemoryFamily::StreamOrdered && is_outermost_exit(api))
    call.captured = record_if_captured(api, call.stream, call.key, call.bytes, call.device);
  if (!on_call_exit(call)) return;  // nested inside a tracked call: that one was recorded
  update_host_pointers(call);
  const ApiInfo& info = api_info(api);
  if (is_host_family(info.family) || is_resource(info.family)) return;
  if (call.result == 0) {
    if (info.family == MemoryFamily::StreamOrdered) note_stream_ordered_use();
    if (info.family == MemoryFamily::Managed && info.role == ApiRole::Alloc) start_unified_memory_records();
    sample_after_memory_change(call.device);
  } else if (info.role == ApiRole::Alloc) {
    // Rare, and what the out-of-memory finding is made of: the device's state right now.
    sample_at_failed_allocation(call.device);
    record_state_at_failed_allocation(call.device);
  }
}

void on_resource(CuptiThreadState& tls, CUpti_CallbackId cbid, const CUpti_ResourceData* data) noexcept {
  // CU_INIT_FINISHED arrives with no data at all.
  if (!data) return;
  if (cbid == CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED) {
    on_graph_node_created(tls, static_cast<const CUpti_GraphData*>(data->resourceDescriptor));
    return;
  }
  if (cbid == CUPTI_CBID_RESOURCE_MODULE_LOADED) {
    const auto* module = static_cast<const CUpti_ModuleResourceData*>(data->resourceDescriptor);
    if (module) on_module_loaded(module->moduleId, module->pCubin, module->cubinSize);
    return;
  }
  if (!data->context) return;
  if (cbid != CUPTI_CBID_RESOURCE_CONTEXT_CREATED && cbid != CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING) return;
  uint32_t uid = 0;
  if (cuptiGetContextId(data->context, &uid) != CUPTI_SUCCESS) return;
  const int32_t device = device_of(data->context, uid);
  if (cbid == CUPTI_CBID_RESOURCE_CONTEXT_CREATED) {
    on_context_created(uid, device);
    sampler_context_created(data->context, device);
    launch_checks_context_created(device);
    record_device_info(device);
  } else {
    sampler_context_destroying(data->context);
    on_context_destroyed(uid, device);
    forget_host_pointers();
  }
}

void CUPTIAPI callback(void*, CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void* data) {
  // A disabled writer (forked child, unwritable trace) records nothing: skip all work.
  if (!trace_enabled()) return;
  // The thread's state looked up once (a call of __tls_get_addr in a dlopened library): GCC would
  // compute the address again after each call rather than keep it, unless it cannot see what it is.
  CuptiThreadState* state = &tls_state;
  asm("" : "+r"(state));
  CuptiThreadState& tls = *state;
  if (tls.in_callback) {
    // The launch checks' own questions about a kernel (cuKernelGetParamInfo) make the driver load
    // its module lazily, inside cuaudit's callback: the module's code is still kept. Nothing else
    // nested is recorded.
    if (domain == CUPTI_CB_DOMAIN_RESOURCE && cbid == CUPTI_CBID_RESOURCE_MODULE_LOADED)
      on_resource(tls, cbid, static_cast<const CUpti_ResourceData*>(data));
    return;
  }
  const StageTimer timer(Stage::Callback);
  tls.in_callback = true;
  if (domain == CUPTI_CB_DOMAIN_RESOURCE) {
    on_resource(tls, cbid, static_cast<const CUpti_ResourceData*>(data));
  } else {
    const auto* api = static_cast<const CUpti_CallbackData*>(data);
    const bool runtime_enter = domain == CUPTI_CB_DOMAIN_RUNTIME_API && api && api->callbackSite == CUPTI_API_ENTER;
    if (runtime_enter) ++tls.runtime_depth;
    on_api(tls, domain, cbid, api);
    if (domain == CUPTI_CB_DOMAIN_RUNTIME_API && api && api->callbackSite == CUPTI_API_EXIT && tls.runtime_depth > 0)
      --tls.runtime_depth;
  }
  tls.in_callback = false;
}

void CUPTIAPI empty_callback(void*, CUpti_CallbackDomain, CUpti_CallbackId, const void*) {}

// Every runtime entry point (any of them can fail, and failures are what the unchecked-error check
// judges; ids this CUPTI lacks are refused and skipped), and the driver callbacks whose roles this
// run needs (cupti_callbacks.inc). DriverLaunch waits for the program's first kernel handle.
bool enable_api_callbacks(bool track_resources, bool check_launches, char* error, size_t error_bytes) noexcept {
  using namespace callback_role;
  for (CUpti_CallbackId cbid = 1; cbid < CUPTI_RUNTIME_TRACE_CBID_SIZE; ++cbid)
    cuptiEnableCallback(1, g_subscriber, CUPTI_CB_DOMAIN_RUNTIME_API, cbid);
  const uint16_t needed = Tracked | GraphMemory | Export | (track_resources ? Resource : 0) |
                          (check_launches ? (kLaunchHooks & ~DriverLaunch) : 0);
  for (size_t i = 0; i < callback_row_count(); ++i) {
    const CallbackRow& row = callback_rows()[i];
    if (row.domain != CUPTI_CB_DOMAIN_DRIVER_API || !(row.roles & needed)) continue;
    // An id this CUPTI lacks (an older driver without cuLibraryLoad, ...) is skipped, unless the
    // program's allocations would go unseen.
    if (cuptiEnableCallback(1, g_subscriber, row.domain, row.cbid) != CUPTI_SUCCESS && (row.roles & Tracked)) {
      snprintf(error, error_bytes, "cannot enable CUPTI callback %u of domain %d", static_cast<unsigned>(row.cbid),
               static_cast<int>(row.domain));
      return false;
    }
  }
  return true;
}

}  // namespace

CUpti_CallbackFunc cupti_callback() noexcept { return callback; }

bool subscribe_callbacks(const SubscribeOptions& options, char* error, size_t error_bytes) noexcept {
  const bool track_resources = options.track_resources, check_launches = options.check_launches;
  g_record_call_sites = options.record_call_sites;
  g_check_launches = check_launches;
  set_pool_blocks_tracked_for_launches(check_launches);
  build_callback_routes(track_resources);

  char other_tool[CUPTI_OLD_SUBSCRIBER_NAME_MIN_LEN] = {};
  CUpti_SubscriberParams params{};
  params.structSize = CUpti_SubscriberParams_STRUCT_SIZE;
  params.subscriberName = "cuaudit";
  params.oldSubscriberName = other_tool;
  params.oldSubscriberSize = sizeof other_tool;
  const CUptiResult rc =
      cuptiSubscribe_v2(&g_subscriber, options.empty_callbacks ? empty_callback : callback, nullptr, &params);
  if (rc != CUPTI_SUCCESS) {
    const char* reason = nullptr;
    cuptiGetResultString(rc, &reason);
    if (rc == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED) {
      snprintf(error, error_bytes,
               "another CUDA tool (%s) already holds the CUPTI subscriber slot (CUPTI error %d); "
               "cuaudit cannot track this process: run it without compute-sanitizer, Nsight or other profilers",
               // CUPTI writes "<not provided>" when the other tool gave no name.
               other_tool[0] && other_tool[0] != '<' ? other_tool : "compute-sanitizer, Nsight or a profiler",
               static_cast<int>(rc));
    } else {
      snprintf(error, error_bytes, "cuptiSubscribe failed: %s (CUPTI error %d)", reason ? reason : "unknown",
               static_cast<int>(rc));
    }
    return false;
  }
  if (!enable_api_callbacks(track_resources, check_launches, error, error_bytes)) return false;
  cuptiEnableCallback(1, g_subscriber, CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_CONTEXT_CREATED);
  cuptiEnableCallback(1, g_subscriber, CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING);
  // Kernel nodes the program adds explicitly (the launch checks).
  if (check_launches)
    cuptiEnableCallback(1, g_subscriber, CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED);
  // The code of every module, for the checks of what each kernel's code requires (kernel_code.h).
  if (check_launches && keeping_kernel_code())
    cuptiEnableCallback(1, g_subscriber, CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_MODULE_LOADED);
  return true;
}

}  // namespace cuaudit::inject
