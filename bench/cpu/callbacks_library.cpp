// The library bench_callbacks loads (callbacks.cpp): cuaudit's CUPTI callback and the code it runs,
// built as the injection is (a library loaded with dlopen, its own copy of the recorder), and one
// entry that calls the callback as CUPTI does, at a runtime call's entry and exit, with the
// callback data CUPTI builds for a successful call.
#include <cuda_runtime_api.h>
#include <cupti.h>

#include <cstdint>

#include "alternating_rounds.h"
#include "cupti_callback_table.h"
#include "cupti_subscriber.h"

extern "C" __attribute__((visibility("default"))) void cuaudit_bench_runtime_calls(CUpti_CallbackId cbid,
                                                                                   uint64_t calls) {
  // This library's own recorder (the program's is another copy) writes the trace the callbacks
  // would write to: opened once, with the routes.
  static const bool ready =
      (cuaudit::inject::build_callback_routes(false), cuaudit::bench::open_bench_trace("bench_callbacks"));
  if (!ready) return;
  const CUpti_CallbackFunc callback = cuaudit::inject::cupti_callback();
  cudaError_t result = cudaSuccess;
  cudaStreamSynchronize_v3020_params params{};
  CUpti_CallbackData data{};
  data.functionName = "a runtime call";
  data.functionParams = &params;
  data.functionReturnValue = &result;
  data.correlationId = 1;
  for (uint64_t i = 0; i < calls; ++i) {
    data.callbackSite = CUPTI_API_ENTER;
    callback(nullptr, CUPTI_CB_DOMAIN_RUNTIME_API, cbid, &data);
    data.callbackSite = CUPTI_API_EXIT;
    callback(nullptr, CUPTI_CB_DOMAIN_RUNTIME_API, cbid, &data);
  }
}
