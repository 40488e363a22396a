// Compiled on the GPU machine against the toolkit's own Sanitizer API headers (the development
// machines have none) by check_declarations.sh: the numbers and layouts injection/sanitizer_api.h
// declares from NVIDIA's reference must be the headers'. A mismatch fails to compile, naming it.
#include <sanitizer.h>

#include <cstddef>
#include <cstdio>

#include "sanitizer_api.h"

namespace ours = cuaudit::inject::sanitizer;

static_assert(ours::kDomainResource == SANITIZER_CB_DOMAIN_RESOURCE, "resource domain");
static_assert(ours::kDomainSynchronize == SANITIZER_CB_DOMAIN_SYNCHRONIZE, "synchronize domain");
static_assert(ours::kDomainLaunch == SANITIZER_CB_DOMAIN_LAUNCH, "launch domain");
static_assert(ours::kContextCreationStarting == SANITIZER_CBID_RESOURCE_CONTEXT_CREATION_STARTING,
              "context creation starting");
static_assert(ours::kContextCreationFinished == SANITIZER_CBID_RESOURCE_CONTEXT_CREATION_FINISHED,
              "context creation finished");
static_assert(ours::kModuleLoaded == SANITIZER_CBID_RESOURCE_MODULE_LOADED, "module loaded");
static_assert(ours::kDeviceMemoryAlloc == SANITIZER_CBID_RESOURCE_DEVICE_MEMORY_ALLOC, "device memory alloc");
static_assert(ours::kDeviceMemoryFree == SANITIZER_CBID_RESOURCE_DEVICE_MEMORY_FREE, "device memory free");
static_assert(ours::kHostMemoryAlloc == SANITIZER_CBID_RESOURCE_HOST_MEMORY_ALLOC, "host memory alloc");
static_assert(ours::kHostMemoryFree == SANITIZER_CBID_RESOURCE_HOST_MEMORY_FREE, "host memory free");
static_assert(ours::kContextSynchronized == SANITIZER_CBID_SYNCHRONIZE_CONTEXT_SYNCHRONIZED, "context synchronized");
static_assert(ours::kLaunchBegin == SANITIZER_CBID_LAUNCH_BEGIN, "launch begin");
static_assert(ours::kDeviceSideMalloc == SANITIZER_INSTRUCTION_DEVICE_SIDE_MALLOC, "device-side malloc");
static_assert(ours::kDeviceSideFree == SANITIZER_INSTRUCTION_DEVICE_SIDE_FREE, "device-side free");
static_assert(ours::kFlagModule == SANITIZER_MEMORY_FLAG_MODULE &&
                  ours::kFlagManaged == SANITIZER_MEMORY_FLAG_MANAGED &&
                  ours::kFlagHostPinned == SANITIZER_MEMORY_FLAG_HOST_PINNED,
              "memory flags");

#define SAME_FIELD(Ours, Theirs, ours_field, theirs_field)                                    \
  static_assert(offsetof(Ours, ours_field) == offsetof(Theirs, theirs_field), #theirs_field); \
  static_assert(sizeof(Ours::ours_field) == sizeof(Theirs::theirs_field), #theirs_field " size")

// An array of ours that stands for `n` consecutive fields of theirs (gridDim_x, _y, _z).
#define SAME_FIELDS(Ours, Theirs, ours_array, theirs_first, n)                                \
  static_assert(offsetof(Ours, ours_array) == offsetof(Theirs, theirs_first), #theirs_first); \
  static_assert(sizeof(Ours::ours_array) == (n) * sizeof(Theirs::theirs_first), #theirs_first " and the next")

SAME_FIELD(ours::ResourceModuleData, Sanitizer_ResourceModuleData, context, context);
SAME_FIELD(ours::ResourceModuleData, Sanitizer_ResourceModuleData, module, module);
SAME_FIELD(ours::ResourceModuleData, Sanitizer_ResourceModuleData, cubin_bytes, cubinSize);
SAME_FIELD(ours::ResourceModuleData, Sanitizer_ResourceModuleData, cubin, pCubin);
SAME_FIELD(ours::ResourceMemoryData, Sanitizer_ResourceMemoryData, address, address);
SAME_FIELD(ours::ResourceMemoryData, Sanitizer_ResourceMemoryData, size, size);
SAME_FIELD(ours::ResourceMemoryData, Sanitizer_ResourceMemoryData, context, context);
SAME_FIELD(ours::ResourceMemoryData, Sanitizer_ResourceMemoryData, device, device);
SAME_FIELD(ours::ResourceMemoryData, Sanitizer_ResourceMemoryData, flags, flags);
SAME_FIELD(ours::SynchronizeData, Sanitizer_SynchronizeData, context, context);
SAME_FIELD(ours::LaunchData, Sanitizer_LaunchData, context, context);
SAME_FIELD(ours::LaunchData, Sanitizer_LaunchData, stream_handle, hStream);
SAME_FIELD(ours::LaunchData, Sanitizer_LaunchData, module, module);
SAME_FIELD(ours::LaunchData, Sanitizer_LaunchData, function, function);
SAME_FIELD(ours::LaunchData, Sanitizer_LaunchData, function_name, functionName);
SAME_FIELDS(ours::LaunchData, Sanitizer_LaunchData, grid, gridDim_x, 3);
SAME_FIELDS(ours::LaunchData, Sanitizer_LaunchData, block, blockDim_x, 3);
SAME_FIELD(ours::LaunchData, Sanitizer_LaunchData, launch, hLaunch);
SAME_FIELD(ours::LaunchData, Sanitizer_LaunchData, device, device);

int main() {
  std::printf("PASS sanitizer_api.h: every number and field cuaudit declares matches the toolkit's headers\n");
  return 0;
}
