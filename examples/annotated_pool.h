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

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "nvtx_heap.h"

class AnnotatedPool {
 public:
  AnnotatedPool(const char* name, size_t block_bytes, size_t blocks) : block_bytes_(block_bytes) {
    if (cudaMalloc(&base_, block_bytes * blocks) != cudaSuccess) return;
    for (size_t i = blocks; i-- > 0;) free_.push_back(static_cast<char*>(base_) + i * block_bytes);
    // The heap: the range blocks come from, and the name reports will use.
    heap_ = std::make_unique<NvtxHeap>(name, base_, block_bytes * blocks);
  }

  ~AnnotatedPool() {
    heap_.reset();  // blocks still handed out leak here
    cudaFree(base_);
  }

  void* take() {
    if (free_.empty()) return nullptr;
    void* block = free_.back();
    free_.pop_back();
    heap_->region(block, block_bytes_);
    return block;
  }

  void give_back(void* block) {
    heap_->unregion(block);
    free_.push_back(block);
  }

 private:
  void* base_ = nullptr;
  size_t block_bytes_;
  std::vector<void*> free_;
  std::unique_ptr<NvtxHeap> heap_;
};
