// The probe's CUPTI subscriber, in a file of its own: cupti.h and the Sanitizer API's sanitizer.h
// both define CUDA's obsolete v1 parameter structs, so one translation unit cannot include both.
#include <cupti.h>

#include <atomic>
#include <cstdio>

std::atomic<unsigned long long> cupti_runtime_calls{0}, cupti_launches{0};

namespace {
void CUPTIAPI on_cupti(void*, CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void* data) {
  const auto* d = static_cast<const CUpti_CallbackData*>(data);
  if (domain != CUPTI_CB_DOMAIN_RUNTIME_API || d->callbackSite != CUPTI_API_ENTER) return;
  ++cupti_runtime_calls;
  if (cbid == CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000) ++cupti_launches;
}
}  // namespace

bool subscribe_cupti() {
  CUpti_SubscriberHandle sub;
  const CUptiResult r = cuptiSubscribe(&sub, reinterpret_cast<CUpti_CallbackFunc>(on_cupti), nullptr);
  const char* text = nullptr;
  cuptiGetResultString(r, &text);
  std::printf("cuptiSubscribe: %d (%s)\n", static_cast<int>(r), text ? text : "?");
  if (r != CUPTI_SUCCESS) return false;
  cuptiEnableDomain(1, sub, CUPTI_CB_DOMAIN_RUNTIME_API);
  return true;
}
