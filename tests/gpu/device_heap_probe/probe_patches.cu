// Device-side callbacks the Sanitizer API patches in place of (after) each device malloc and free
// of a module (probe.cu asks for them): each call appends one event to a buffer in mapped host
// memory that probe.cu hands to every launch. Built with `nvcc --fatbin --compile-as-tools-patch`.
#include <sanitizer_patching.h>

#include "probe_events.h"

namespace {
__device__ __inline__ void record(ProbeEvents& events, uint32_t kind, uint64_t pc, const void* ptr, uint64_t bytes) {
  const uint32_t i = atomicAdd(&events.count, 1u);
  if (i >= kProbeEventCapacity) return;  // full: the host sees count past the capacity, and says so
  ProbeEvent& e = events.events[i];
  e.kind = kind;
  e.pc = pc;
  e.address = reinterpret_cast<uint64_t>(ptr);
  e.bytes = bytes;
  __threadfence_system();
}
}  // namespace

extern "C" __device__ __noinline__ SanitizerPatchResult probe_device_malloc(void* userdata, uint64_t pc, void* ptr,
                                                                            uint64_t bytes) {
  if (userdata) record(*static_cast<ProbeEvents*>(userdata), kProbeMalloc, pc, ptr, bytes);
  return SANITIZER_PATCH_SUCCESS;
}

extern "C" __device__ __noinline__ SanitizerPatchResult probe_device_free(void* userdata, uint64_t pc, void* ptr) {
  if (userdata) record(*static_cast<ProbeEvents*>(userdata), kProbeFree, pc, ptr, 0);
  return SANITIZER_PATCH_SUCCESS;
}
