// The device functions --device-heap patches in after each device-side malloc and free of a module
// whose code calls malloc (sanitizer_subscriber.cpp asks the Compute Sanitizer API to). Each
// appends the call to the context's buffer (device_heap_buffer.h) through the launch's slot, the
// userdata the host handed that launch. Built with `nvcc --fatbin --compile-as-tools-patch`.
#include <stdint.h>

#include "device_heap_buffer.h"

// The patch functions' result type (sanitizer_patching.h's SanitizerPatchResult), declared from
// the API reference like the host side's types (sanitizer_api.h).
enum SanitizerPatchResult { SANITIZER_PATCH_SUCCESS = 0 };

namespace {

__device__ __inline__ void record(void* userdata, uint64_t kind, uint64_t pc, const void* ptr, uint64_t bytes) {
  const auto* slot = static_cast<const cuaudit::device_heap::LaunchSlot*>(userdata);
  if (!slot || !slot->buffer) return;
  cuaudit::device_heap::Buffer* buffer = slot->buffer;
  const unsigned long long i = atomicAdd(&buffer->reserved, 1ull);
  if (i >= buffer->capacity) return;  // full: the host counts what passed the capacity, and says so
  cuaudit::device_heap::Call& call = buffer->calls[i];
  call.pc = pc;
  call.address = reinterpret_cast<uint64_t>(ptr);
  call.bytes = bytes;
  __threadfence_system();  // the call is whole before the word that says so
  *static_cast<volatile uint64_t*>(&call.launch_and_kind) =
      cuaudit::device_heap::pack_launch_and_kind(slot->launch_id, kind);
}

}  // namespace

extern "C" __device__ __noinline__ SanitizerPatchResult cuaudit_device_malloc(void* userdata, uint64_t pc, void* ptr,
                                                                              uint64_t bytes) {
  record(userdata, cuaudit::device_heap::kMalloc, pc, ptr, bytes);
  return SANITIZER_PATCH_SUCCESS;
}

extern "C" __device__ __noinline__ SanitizerPatchResult cuaudit_device_free(void* userdata, uint64_t pc, void* ptr) {
  record(userdata, cuaudit::device_heap::kFree, pc, ptr, 0);
  return SANITIZER_PATCH_SUCCESS;
}
