// A small device-memory pool that describes itself to tools with NVTX's memory API
// (nvtx3/nvToolsExtMem.h, header-only, in the CUDA toolkit): the one cudaMalloc it carves blocks
// out of is a heap, each block it hands out a region. Without the annotations a tool sees one
// allocation that lives as long as the pool; with them cuaudit (and compute-sanitizer) see every
// block: a block never given back is a leak named after the pool, one given back twice a double
// free, and a kernel launched with a pointer into a block already given back is a stale pointer.
// The annotations cost nothing when no tool is attached (each call returns at once).
//
// See docs/POOLS.md. Blocks are fixed-size here to keep the example short; the annotations are the
// same for any pool.
#pragma once

#include <cuda_runtime.h>
#include <nvtx3/nvToolsExtMem.h>

#include <cstddef>
#include <cstdint>
#include <vector>

class AnnotatedPool {
 public:
  AnnotatedPool(const char* name, size_t block_bytes, size_t blocks) : block_bytes_(block_bytes) {
    if (cudaMalloc(&base_, block_bytes * blocks) != cudaSuccess) return;
    for (size_t i = blocks; i-- > 0;) free_.push_back(static_cast<char*>(base_) + i * block_bytes);
    domain_ = nvtxDomainCreateA("AnnotatedPool");
    // The heap: the range blocks come from, and the name reports will use.
    nvtxMemVirtualRangeDesc_t range = {block_bytes * blocks, base_};
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

  ~AnnotatedPool() {
    nvtxMemHeapUnregister(domain_, heap_);  // blocks still handed out leak here
    cudaFree(base_);
    nvtxDomainDestroy(domain_);
  }

  void* take() {
    if (free_.empty()) return nullptr;
    void* block = free_.back();
    free_.pop_back();
    nvtxMemVirtualRangeDesc_t range = {block_bytes_, block};
    nvtxMemRegionsRegisterBatch_t batch = {};
    batch.extCompatID = NVTX_EXT_COMPATID_MEM;
    batch.structSize = sizeof batch;
    batch.regionType = NVTX_MEM_TYPE_VIRTUAL_ADDRESS;
    batch.heap = heap_;
    batch.regionCount = 1;
    batch.regionDescElementSize = sizeof range;
    batch.regionDescElements = &range;
    nvtxMemRegionsRegister(domain_, &batch);
    return block;
  }

  void give_back(void* block) {
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
    free_.push_back(block);
  }

 private:
  void* base_ = nullptr;
  size_t block_bytes_;
  std::vector<void*> free_;
  nvtxDomainHandle_t domain_ = nullptr;
  nvtxMemHeapHandle_t heap_ = nullptr;
};
