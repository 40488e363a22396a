// The memory sources (memory_sources.inc): who hands out memory, and the operations a pool's
// blocks go through. Shared by the injection, the tool and (through the injection's
// cuaudit_memory_source entry point) the Python hooks.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <iterator>

namespace cuaudit {

enum class MemorySource : uint8_t {
#define CUAUDIT_SOURCE(id, number, key, kind, segments, description) id = number,
#include "memory_sources.inc"
#undef CUAUDIT_SOURCE
};

enum class SourceKind : uint8_t { CudaApi, NvtxHeap, FrameworkPool };
enum class SourceSegments : uint8_t { NoSegments, HasSegments };

// What happens to a pool's block (BlockOp::None: not a block, a CUDA call).
enum class BlockOp : uint8_t { None = 0, HandOut = 1, Resize = 2, TakeBack = 3, ReleaseAll = 4, Reset = 5 };
inline constexpr bool is_known_block_op(uint8_t op) { return op >= 1 && op <= 5; }
// Whether `op` makes memory live (an allocation, as the checks see it) or ends it.
inline constexpr bool block_op_allocates(BlockOp op) { return op == BlockOp::HandOut || op == BlockOp::Resize; }

struct SourceInfo {
  MemorySource source;
  const char* key;  // "cupy_pool": how machine-readable outputs and the Python hooks name it
  SourceKind kind;
  bool has_segments;
  const char* description;  // "CuPy's memory pool"
};

inline constexpr SourceInfo kSourceInfo[] = {
#define CUAUDIT_SOURCE(id, number, key, kind, segments, description) \
  {MemorySource::id, key, SourceKind::kind, SourceSegments::segments == SourceSegments::HasSegments, description},
#include "memory_sources.inc"
#undef CUAUDIT_SOURCE
};
inline constexpr size_t kMemorySources = std::size(kSourceInfo);

// Numbers are dense from 0: a source's number is its index.
constexpr bool sources_dense() {
  for (size_t i = 0; i < kMemorySources; ++i) {
    if (static_cast<size_t>(kSourceInfo[i].source) != i) return false;
  }
  return true;
}
static_assert(sources_dense(), "memory_sources.inc: numbers must run 0, 1, 2, ... in order");

inline const SourceInfo* source_info(uint32_t number) {
  return number < kMemorySources ? &kSourceInfo[number] : nullptr;
}
inline const SourceInfo& source_info(MemorySource s) { return kSourceInfo[static_cast<size_t>(s)]; }

// A source whose blocks Pool records describe (every source but CUDA's own calls).
inline bool is_pool_source(uint32_t number) {
  const SourceInfo* info = source_info(number);
  return info && info->kind != SourceKind::CudaApi;
}

// The source a key names ("cupy_pool"), or nullptr.
inline const SourceInfo* source_by_key(const char* key) {
  if (!key) return nullptr;
  for (const SourceInfo& s : kSourceInfo) {
    if (strcmp(s.key, key) == 0) return &s;
  }
  return nullptr;
}

}  // namespace cuaudit
