// The NVTX memory extension's injection (nvtx3/nvToolsExtMem.h): a pool that describes itself to
// tools with nvtxMemHeapRegister / nvtxMemRegionsRegister / nvtxMemRegionsUnregister tells
// cuaudit every block it hands out and takes back, which become allocations and releases of
// family PoolBlock (pool_recorder.h). compute-sanitizer reads the same annotations.
//
// NVTX finds this library through NVTX_INJECTION64_PATH (the launcher sets it to this library,
// which CUDA also loads through CUDA_INJECTION64_PATH: one library, one instance) and calls
// InitializeInjectionNvtxExtension once per extension module; for the memory module we fill in
// the function slots we implement, and NVTX turns every other slot into a no-op.
#define NVTX_NO_IMPL
#include <nvtx3/nvToolsExtMem.h>

#include <cstring>

#include "nvtx_memory.h"
#include "pool_recorder.h"
#include "stack_capture.h"
#include "stack_sampling.h"

namespace cuaudit::inject {
namespace {

// Heap handles are our pool numbers; handle 0 is NVTX's process-wide heap (pool 0).
uint32_t pool_of(nvtxMemHeapHandle_t heap) { return static_cast<uint32_t>(reinterpret_cast<uintptr_t>(heap)); }

// Each heap's device, looked up once when it is registered (regions inherit it), and its range
// (its segment, given back when the heap is unregistered).
constexpr uint32_t kHeapDevices = 4096;
int32_t g_heap_device[kHeapDevices];
struct HeapRange {
  uint64_t base = 0, bytes = 0;
};
HeapRange g_heap_range[kHeapDevices];

int32_t device_of_heap(uint32_t pool, uint64_t region) {
  if (pool != 0 && pool < kHeapDevices) return g_heap_device[pool];
  return device_of_pointer(region);
}

// The i-th element of an array whose elements are `element_bytes` apart (a newer NVTX may make
// them larger than the struct we know; a smaller one is not read).
template <typename T>
const T* element(const void* array, size_t element_bytes, size_t i) {
  if (!array || element_bytes < sizeof(T)) return nullptr;
  return reinterpret_cast<const T*>(static_cast<const char*>(array) + i * element_bytes);
}

nvtxMemHeapHandle_t NVTX_API heap_register(nvtxDomainHandle_t, const nvtxMemHeapDesc_t* desc) {
  if (!desc) return reinterpret_cast<nvtxMemHeapHandle_t>(intptr_t{-1});  // NVTX_MEM_HEAP_HANDLE_NO_TOOL
  const char* name = desc->messageType == NVTX_MESSAGE_TYPE_ASCII ? desc->message.ascii : nullptr;
  uint64_t base = 0, bytes = 0;
  if (desc->type == NVTX_MEM_TYPE_VIRTUAL_ADDRESS && desc->typeSpecificDesc &&
      desc->typeSpecificDescSize >= sizeof(nvtxMemVirtualRangeDesc_t)) {
    const auto* range = static_cast<const nvtxMemVirtualRangeDesc_t*>(desc->typeSpecificDesc);
    base = reinterpret_cast<uintptr_t>(range->ptr);
    bytes = range->size;
  }
  const int32_t device = device_of_pointer(base);
  const uint32_t pool = register_pool(MemorySource::NvtxHeap, name, base, bytes, device, capture_stack());
  if (pool < kHeapDevices) {
    g_heap_device[pool] = device;
    g_heap_range[pool] = {base, bytes};
  }
  return reinterpret_cast<nvtxMemHeapHandle_t>(static_cast<uintptr_t>(pool));
}

void heap_release(Api api, nvtxMemHeapHandle_t heap) {
  const uint32_t pool = pool_of(heap);
  const uint64_t stack = capture_stack();
  record_pool_block(api, pool, 0, 0, trace::kUnknownDevice, stack);
  // An unregistered heap's range is no longer the pool's (a reset heap keeps it).
  if (api == Api::nvtxMemHeapUnregister && pool != 0 && pool < kHeapDevices && g_heap_range[pool].bytes) {
    record_pool_segment(pool, false, g_heap_range[pool].base, g_heap_range[pool].bytes, g_heap_device[pool], stack);
    g_heap_range[pool] = {};
  }
}
void NVTX_API heap_unregister(nvtxDomainHandle_t, nvtxMemHeapHandle_t heap) {
  heap_release(Api::nvtxMemHeapUnregister, heap);
}
void NVTX_API heap_reset(nvtxDomainHandle_t, nvtxMemHeapHandle_t heap) { heap_release(Api::nvtxMemHeapReset, heap); }

void NVTX_API regions_register(nvtxDomainHandle_t, const nvtxMemRegionsRegisterBatch_t* desc) {
  if (!desc || desc->regionType != NVTX_MEM_TYPE_VIRTUAL_ADDRESS) return;
  const uint32_t pool = pool_of(desc->heap);
  uint64_t stack = trace::kNoStack;  // walked once for the batch, at its first sampled region
  bool walked = false;
  for (size_t i = 0; i < desc->regionCount; ++i) {
    const auto* range = element<nvtxMemVirtualRangeDesc_t>(desc->regionDescElements, desc->regionDescElementSize, i);
    if (!range) return;
    const uint64_t pointer = reinterpret_cast<uintptr_t>(range->ptr);
    const bool sampled = take_allocation_stack(range->size);
    if (sampled && !walked) {
      stack = capture_stack();
      walked = true;
    }
    record_pool_block(Api::nvtxMemRegionsRegister, pool, pointer, range->size, device_of_heap(pool, pointer),
                      sampled ? stack : trace::kNoStack);
    // A region's handle is its pointer: unregistering by handle or by pointer is the same.
    if (desc->regionHandleElementsOut) {
      desc->regionHandleElementsOut[i] = reinterpret_cast<nvtxMemRegionHandle_t>(const_cast<void*>(range->ptr));
    }
  }
}

void NVTX_API regions_resize(nvtxDomainHandle_t, const nvtxMemRegionsResizeBatch_t* desc) {
  if (!desc || desc->regionType != NVTX_MEM_TYPE_VIRTUAL_ADDRESS) return;
  const uint64_t stack = take_release_stack() ? capture_stack() : trace::kNoStack;  // the block keeps its site
  for (size_t i = 0; i < desc->regionDescCount; ++i) {
    const auto* range = element<nvtxMemVirtualRangeDesc_t>(desc->regionDescElements, desc->regionDescElementSize, i);
    if (!range) return;
    // The pool is the region's, which the tool knows: 0 here.
    record_pool_block(Api::nvtxMemRegionsResize, 0, reinterpret_cast<uintptr_t>(range->ptr), range->size,
                      trace::kUnknownDevice, stack);
  }
}

void NVTX_API regions_unregister(nvtxDomainHandle_t, const nvtxMemRegionsUnregisterBatch_t* desc) {
  if (!desc) return;
  const uint64_t stack = take_release_stack() ? capture_stack() : trace::kNoStack;
  for (size_t i = 0; i < desc->refCount; ++i) {
    const auto* ref = element<nvtxMemRegionRef_t>(desc->refElements, desc->refElementSize, i);
    if (!ref) return;
    // Handles are pointers (regions_register hands them out so).
    record_pool_block(Api::nvtxMemRegionsUnregister, 0, reinterpret_cast<uintptr_t>(ref->pointer), 0,
                      trace::kUnknownDevice, stack);
  }
}

}  // namespace

bool nvtx_memory_module(nvtxExtModuleInfo_t* module) noexcept {
  if (!module || module->moduleId != NVTX_EXT_MODULEID_MEM || module->segmentsCount < 1 || !module->segments) {
    return false;
  }
  nvtxExtModuleSegment_t& segment = module->segments[0];
  if (!segment.functionSlots || segment.slotCount <= NVTX3EXT_CBID_nvtxMemRegionsUnregister) return false;
  auto set = [&](size_t slot, auto fn) { segment.functionSlots[slot] = reinterpret_cast<intptr_t>(fn); };
  set(NVTX3EXT_CBID_nvtxMemHeapRegister, &heap_register);
  set(NVTX3EXT_CBID_nvtxMemHeapUnregister, &heap_unregister);
  set(NVTX3EXT_CBID_nvtxMemHeapReset, &heap_reset);
  set(NVTX3EXT_CBID_nvtxMemRegionsRegister, &regions_register);
  set(NVTX3EXT_CBID_nvtxMemRegionsResize, &regions_resize);
  set(NVTX3EXT_CBID_nvtxMemRegionsUnregister, &regions_unregister);
  return true;
}

}  // namespace cuaudit::inject

// NVTX's entry points. Core NVTX (ranges, marks) is not ours: its functions stay no-ops.
extern "C" __attribute__((visibility("default"))) int InitializeInjectionNvtx2(const void* /*get_export_table*/) {
  return 1;
}
extern "C" __attribute__((visibility("default"))) int InitializeInjectionNvtxExtension(nvtxExtModuleInfo_t* module) {
  cuaudit::inject::nvtx_memory_module(module);
  return 1;  // other extensions' slots become no-ops
}
