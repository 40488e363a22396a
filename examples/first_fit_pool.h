// The seeds' SimplePool in this project's words: one cudaMalloc carved first-fit into blocks,
// a block split when the rest is worth keeping, and neighbouring free blocks merged again when one
// is given back (coalescing). Described to tools with NVTX's memory API (nvtx_heap.h), so cuaudit
// sees every block and measures the pool's holes: the largest block it could still hand out
// against all its free memory, the seeds' fragmentation ratio (docs/FRAGMENTATION.md).
//
// Unlike the seeds' version the block list lives on the host: the pool's memory is device memory,
// which host code must not write block headers into.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <iterator>
#include <map>
#include <memory>

#include "nvtx_heap.h"

class FirstFitPool {
 public:
  static constexpr size_t kAlignment = 256;  // what cudaMalloc guarantees, kept for every block

  FirstFitPool(const char* name, size_t bytes) {
    if (cudaMalloc(&base_, bytes) != cudaSuccess) return;
    blocks_[0] = {bytes, true};
    heap_ = std::make_unique<NvtxHeap>(name, base_, bytes);
  }
  ~FirstFitPool() {
    heap_.reset();  // blocks still handed out leak here
    cudaFree(base_);
  }

  // The first free block large enough, split when what is left could hold another block; nullptr
  // when no free block is large enough (though the free memory may be, in total: fragmentation).
  void* alloc(size_t n) {
    const size_t need = (n + kAlignment - 1) / kAlignment * kAlignment;
    for (auto it = blocks_.begin(); it != blocks_.end(); ++it) {
      Block& b = it->second;
      if (!b.free || b.bytes < need) continue;
      if (b.bytes - need >= kAlignment) {
        blocks_[it->first + need] = {b.bytes - need, true};
        b.bytes = need;
      }
      b.free = false;
      void* p = static_cast<char*>(base_) + it->first;
      heap_->region(p, b.bytes);
      return p;
    }
    return nullptr;
  }

  // The block at `p` is free again, merged with free neighbours on both sides.
  void dealloc(void* p) {
    if (!p) return;
    auto it = blocks_.find(static_cast<size_t>(static_cast<char*>(p) - static_cast<char*>(base_)));
    if (it == blocks_.end() || it->second.free) return;
    heap_->unregion(p);
    it->second.free = true;
    if (auto next = std::next(it); next != blocks_.end() && next->second.free) {
      it->second.bytes += next->second.bytes;
      blocks_.erase(next);
    }
    if (it != blocks_.begin()) {
      if (auto prev = std::prev(it); prev->second.free) {
        prev->second.bytes += it->second.bytes;
        blocks_.erase(it);
      }
    }
  }

  // What a tool measures, for the program to print: free bytes and the largest free block.
  size_t free_bytes() const {
    size_t n = 0;
    for (const auto& [offset, b] : blocks_) n += b.free ? b.bytes : 0;
    return n;
  }
  size_t largest_free() const {
    size_t n = 0;
    for (const auto& [offset, b] : blocks_) n = b.free && b.bytes > n ? b.bytes : n;
    return n;
  }

 private:
  struct Block {
    size_t bytes;
    bool free;
  };
  void* base_ = nullptr;
  std::map<size_t, Block> blocks_;  // offset -> block, in address order
  std::unique_ptr<NvtxHeap> heap_;
};
