// The library bench_callbacks loads (callbacks.cpp): cuaudit's CUPTI callback and the code it runs,
// built as the injection is (a library loaded with dlopen, its own copy of the recorder), and
// entries that call the callback as CUPTI does, at a runtime call's entry and exit, with the
// callback data CUPTI builds for a successful call: any call, or cudaMalloc and cudaFree pairs.
#include <cuda_runtime_api.h>
#include <cupti.h>

#include <cstdint>

#include "alternating_rounds.h"
#include "cupti_callback_table.h"
#include "cupti_subscriber.h"

namespace {

// This library's own recorder (the program's is another copy) writes the trace the callbacks
// would write to: opened once, with the routes.
bool ready() {
  static const bool opened =
      (cuaudit::inject::build_callback_routes(false), cuaudit::bench::open_bench_trace("bench_callbacks"));
  return opened;
}

// One runtime call's two callbacks.
void call(CUpti_CallbackFunc callback, CUpti_CallbackId cbid, CUpti_CallbackData& data) {
  data.callbackSite = CUPTI_API_ENTER;
  callback(nullptr, CUPTI_CB_DOMAIN_RUNTIME_API, cbid, &data);
  data.callbackSite = CUPTI_API_EXIT;
  callback(nullptr, CUPTI_CB_DOMAIN_RUNTIME_API, cbid, &data);
}

}  // namespace

// `pairs` of cudaMalloc (4 KiB) and cudaFree, each call as CUPTI reports it (no driver callbacks
// nested inside, no context: the device is unknown, so no memory sample is taken).
extern "C" __attribute__((visibility("default"))) void cuaudit_bench_alloc_release(uint64_t pairs) {
  if (!ready()) return;
  const CUpti_CallbackFunc callback = cuaudit::inject::cupti_callback();
  cudaError_t result = cudaSuccess;
  void* pointer = nullptr;
  cudaMalloc_v3020_params alloc{&pointer, 4096};
  cudaFree_v3020_params release{};
  CUpti_CallbackData data{};
  data.functionReturnValue = &result;
  for (uint64_t i = 0; i < pairs; ++i) {
    pointer = reinterpret_cast<void*>(0x7f0000000000 + (i << 12));
    data.functionName = "cudaMalloc";
    data.functionParams = &alloc;
    call(callback, CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020, data);
    release.devPtr = pointer;
    data.functionName = "cudaFree";
    data.functionParams = &release;
    call(callback, CUPTI_RUNTIME_TRACE_CBID_cudaFree_v3020, data);
  }
}

extern "C" __attribute__((visibility("default"))) void cuaudit_bench_runtime_calls(CUpti_CallbackId cbid,
                                                                                   uint64_t calls) {
  if (!ready()) return;
  const CUpti_CallbackFunc callback = cuaudit::inject::cupti_callback();
  cudaError_t result = cudaSuccess;
  cudaStreamSynchronize_v3020_params params{};
  CUpti_CallbackData data{};
  data.functionName = "a runtime call";
  data.functionParams = &params;
  data.functionReturnValue = &result;
  data.correlationId = 1;
  for (uint64_t i = 0; i < calls; ++i) call(callback, cbid, data);
}
