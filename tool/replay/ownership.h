// Who holds each byte the replay saw, decided once for every check (LeakSanitizer's one allocator
// contract, https://github.com/llvm/llvm-project/blob/main/compiler-rt/include/sanitizer/lsan_interface.h):
// CUDA memory the program holds itself, a pool's reserve (a segment: the CUDA allocation a pool hands
// blocks out of), or a block a pool handed out. A segment's bytes are the pool's, its blocks the
// program's: every byte is counted once. A check asks an Owner, never an API's memory family or a
// frame pattern; the frame rules (builtin_allocators.supp) are left for memory no hook describes.
//
// The model learns a pool's reserve from what the pool said (PoolSegment records: CuPy's hook,
// PyTorch's history, NVTX heaps) and, for a pool that says nothing of its segments (XLA's), from its
// blocks: the CUDA allocation a block was handed out of is that pool's.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <unordered_map>

#include "trace_model.h"

namespace cuaudit {

enum class Holding : uint8_t {
  Program,  // CUDA memory the program (or a library it called) allocated and holds itself
  Reserve,  // a pool's segment: CUDA memory a pool took to hand blocks out of
  Block,    // a block a pool handed out: the program's tensor or buffer, inside the pool's reserve
};

struct Owner {
  Holding holding = Holding::Program;
  MemorySource source = MemorySource::Cuda;  // the pool's source (Reserve, Block)
  uint32_t pool = 0;                         // ProcessTrace::pools (Reserve, Block)

  bool is_block() const { return holding == Holding::Block; }
  bool is_reserve() const { return holding == Holding::Reserve; }
  // A framework's pool (memory_sources.inc FrameworkPool): PyTorch's, CuPy's, XLA's.
  bool framework() const { return source_info(source).kind == SourceKind::FrameworkPool; }
  // Kept until the process ends by design: a framework's reserve (its cache of segments).
  bool held_on_purpose() const { return is_reserve() && framework(); }
};

// A pool's block by its own event (a block operation, memory_sources.inc), else the program's memory:
// what an event alone says; a reserve is known only to the replay (Ownership::owner).
Owner owner_of_event(const MemoryEvent& e, const std::map<uint32_t, PoolInfo>& pools);

// The owner of pool `pool`'s reserve, by the trace's record of the pool (its source).
Owner pool_reserve_owner(const std::map<uint32_t, PoolInfo>& pools, uint32_t pool);

// The replay's record of who owns what (ReplayResult::ownership): every CUDA allocation a pool took
// as its reserve, by the allocation's seq. Kept after the replay, when the live heaps are gone.
class Ownership {
 public:
  Ownership() = default;
  explicit Ownership(const std::map<uint32_t, PoolInfo>* pools) : pools_(pools) {}

  // The owner of an allocation, live or released: its pool for a block or a reserve.
  Owner owner(const MemoryEvent& allocation) const;
  // The pool whose reserve (segment) the CUDA allocation is, if any.
  std::optional<uint32_t> segment_of(const MemoryEvent& allocation) const;

  // The replay records: the CUDA allocation `allocation` is pool `pool`'s reserve (the first pool
  // to claim it keeps it). True when this claim was the first.
  bool take_as_reserve(const MemoryEvent& allocation, uint32_t pool) {
    return reserves_.try_emplace(allocation.seq, pool).second;
  }

 private:
  const std::map<uint32_t, PoolInfo>* pools_ = nullptr;
  std::unordered_map<uint64_t, uint32_t> reserves_;  // CUDA allocation seq -> pool
};

}  // namespace cuaudit
