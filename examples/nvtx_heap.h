// The few NVTX memory-API calls a pool makes to describe itself to tools (nvtx3/nvToolsExtMem.h,
// header-only, in the CUDA toolkit): its memory is a heap, each block it hands out a region. Each
// call returns at once when no tool is attached. See docs/POOLS.md.
#pragma once

#include <nvtx3/nvToolsExtMem.h>

#include <cstddef>

class NvtxHeap {
 public:
  // `name` is what reports call the pool; [base, base + bytes) is the memory it hands out.
  NvtxHeap(const char* name, void* base, size_t bytes) {
    domain_ = nvtxDomainCreateA(name);
    nvtxMemVirtualRangeDesc_t range = {bytes, base};
    nvtxMemHeapDesc_t heap = {};
    heap.extCompatID = NVTX_EXT_COMPATID_MEM;
    heap.structSize = sizeof heap;
    heap.usage = NVTX_MEM_HEAP_USAGE_TYPE_SUB_ALLOCATOR;
    heap.type = NVTX_MEM_TYPE_VIRTUAL_ADDRESS;
    heap.typeSpecificDescSize = sizeof range;
    heap.typeSpecificDesc = &range;
    heap.messageType = NVTX_MESSAGE_TYPE_ASCII;
    heap.message.ascii = name;
    heap_ = nvtxMemHeapRegister(domain_, &heap);
  }
  ~NvtxHeap() {
    nvtxMemHeapUnregister(domain_, heap_);  // regions still registered leak here
    nvtxDomainDestroy(domain_);
  }
  NvtxHeap(const NvtxHeap&) = delete;
  NvtxHeap& operator=(const NvtxHeap&) = delete;

  // A block handed out.
  void region(void* block, size_t bytes) {
    nvtxMemVirtualRangeDesc_t range = {bytes, block};
    nvtxMemRegionsRegisterBatch_t batch = {};
    batch.extCompatID = NVTX_EXT_COMPATID_MEM;
    batch.structSize = sizeof batch;
    batch.regionType = NVTX_MEM_TYPE_VIRTUAL_ADDRESS;
    batch.heap = heap_;
    batch.regionCount = 1;
    batch.regionDescElementSize = sizeof range;
    batch.regionDescElements = &range;
    nvtxMemRegionsRegister(domain_, &batch);
  }

  // A block taken back.
  void unregion(void* block) {
    nvtxMemRegionRef_t ref;
    ref.pointer = block;
    nvtxMemRegionsUnregisterBatch_t batch = {};
    batch.extCompatID = NVTX_EXT_COMPATID_MEM;
    batch.structSize = sizeof batch;
    batch.refType = NVTX_MEM_REGION_REF_TYPE_POINTER;
    batch.refCount = 1;
    batch.refElementSize = sizeof ref;
    batch.refElements = &ref;
    nvtxMemRegionsUnregister(domain_, &batch);
  }

 private:
  nvtxDomainHandle_t domain_ = nullptr;
  nvtxMemHeapHandle_t heap_ = nullptr;
};
