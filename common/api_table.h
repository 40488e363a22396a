// The tracked CUDA APIs and what they do to memory: shared by the injection and the tool.
#pragma once

#include <cstddef>
#include <cstdint>
#include <iterator>
#include <string_view>

#include "memory_sources.h"

namespace cuaudit {

enum class ApiRole : uint8_t { Alloc, Free };

// What kind of memory an API creates, or is meant to release (memory_families.inc).
enum class MemoryFamily : uint8_t {
#define CUAUDIT_FAMILY(id, key, description) id,
#include "memory_families.inc"
#undef CUAUDIT_FAMILY
};

struct FamilyInfo {
  const char* key;          // how machine-readable reports name it ("stream_ordered")
  const char* description;  // how a report's sentences name it ("pinned host memory")
};

inline constexpr FamilyInfo kFamilyInfo[] = {
#define CUAUDIT_FAMILY(id, key, description) {key, description},
#include "memory_families.inc"
#undef CUAUDIT_FAMILY
};
inline constexpr size_t kMemoryFamilies = std::size(kFamilyInfo);

// Which namespace a key (pointer or handle) lives in: a free is looked up in its API's space.
// Memory spaces come first; each kind of resource handle has a space of its own (texture and
// surface objects are small integers that would collide).
enum class KeySpace : uint8_t {
  Address,
  ArrayHandle,
  MipmappedHandle,
  VmmHandle,
  VmmReservation,
  VmmMapping,
  Stream,
  Event,
  Graph,
  GraphExec,
  Module,
  Library,
  TextureObject,
  SurfaceObject,
  MemPool,
  ExternalMemory,
  ExternalSemaphore,
};
inline constexpr size_t kKeySpaces = static_cast<size_t>(KeySpace::ExternalSemaphore) + 1;
inline constexpr bool is_memory_space(KeySpace s) { return s <= KeySpace::VmmMapping; }

// Every operation that hands out or takes back memory: CUDA's own APIs (api_list.inc), then the
// block operations of the pools (memory_sources.inc), so that every check names and judges a block
// as it does an allocation. CUDA APIs are ids on the wire; block operations are not (a block's
// record carries its source and BlockOp).
namespace detail {
enum class CudaApiCount : uint16_t {
#define CUAUDIT_API(id, name, role, family, space) id,
#include "api_list.inc"
#undef CUAUDIT_API
  Count
};
}  // namespace detail
inline constexpr uint16_t kCudaApis = static_cast<uint16_t>(detail::CudaApiCount::Count);

enum class Api : uint16_t {
#define CUAUDIT_API(id, name, role, family, space) id,
#include "api_list.inc"
#undef CUAUDIT_API
#define CUAUDIT_BLOCK_OP(id, source, op, name) id,
#include "memory_sources.inc"
#undef CUAUDIT_BLOCK_OP
  Count
};

struct ApiInfo {
  std::string_view name;
  ApiRole role;
  MemoryFamily family;
  KeySpace space;  // a block's key is an address inside its pool's memory
  MemorySource source = MemorySource::Cuda;
  BlockOp op = BlockOp::None;  // a CUDA API: None
};

inline constexpr ApiInfo kApiInfo[] = {
#define CUAUDIT_API(id, name, role, family, space) {name, ApiRole::role, MemoryFamily::family, KeySpace::space},
#include "api_list.inc"
#undef CUAUDIT_API
#define CUAUDIT_BLOCK_OP(id, source, op, name)                       \
  {name,                                                             \
   block_op_allocates(BlockOp::op) ? ApiRole::Alloc : ApiRole::Free, \
   MemoryFamily::PoolBlock,                                          \
   KeySpace::Address,                                                \
   MemorySource::source,                                             \
   BlockOp::op},
#include "memory_sources.inc"
#undef CUAUDIT_BLOCK_OP
};
static_assert(std::size(kApiInfo) == static_cast<size_t>(Api::Count), "kApiInfo must list every Api");

// A CUDA API's info by its id on the wire; nullptr for anything else (block operations are never
// ids on the wire).
inline const ApiInfo* api_info(uint16_t id) { return id < kCudaApis ? &kApiInfo[id] : nullptr; }
inline const ApiInfo& api_info(Api api) { return kApiInfo[static_cast<size_t>(api)]; }

// How a report names memory of a family ("pinned host memory from cudaMallocHost").
inline const char* family_description(MemoryFamily f) { return kFamilyInfo[static_cast<size_t>(f)].description; }

// How machine-readable reports name a family ("stream_ordered").
inline const char* family_key(MemoryFamily f) { return kFamilyInfo[static_cast<size_t>(f)].key; }

// Memory that lives on the host: its leaks have no device.
inline bool is_host_family(MemoryFamily f) {
  return f == MemoryFamily::PinnedHost || f == MemoryFamily::RegisteredHost;
}

// Whether a release through `release` is the right way to give back memory of `allocated`.
inline bool releases_family(Api release, MemoryFamily allocated) {
  const MemoryFamily f = api_info(release).family;
  switch (f) {
    case MemoryFamily::Device:  // cudaFree, cuMemFree: device, managed, pool, graph, imported, mapped
      return allocated == MemoryFamily::Device || allocated == MemoryFamily::Managed ||
             allocated == MemoryFamily::StreamOrdered || allocated == MemoryFamily::GraphMemory ||
             allocated == MemoryFamily::ImportedPool || allocated == MemoryFamily::ExternalBuffer;
    case MemoryFamily::StreamOrdered:  // cudaFreeAsync accepts any device allocation
      return allocated == MemoryFamily::StreamOrdered || allocated == MemoryFamily::Device ||
             allocated == MemoryFamily::Managed || allocated == MemoryFamily::GraphMemory ||
             allocated == MemoryFamily::ImportedPool;
    case MemoryFamily::GraphMemory:  // a graph's free node: graph or stream-ordered memory
      return allocated == MemoryFamily::GraphMemory || allocated == MemoryFamily::StreamOrdered;
    case MemoryFamily::HostHeap:  // libc free and delete never release CUDA memory
      return false;
    default:
      return f == allocated;
  }
}

// Streams, events, graphs, modules and the other handles --track-resources records: not memory.
inline bool is_resource(MemoryFamily f) { return f >= MemoryFamily::Stream && f != MemoryFamily::PoolBlock; }

// Blocks a pool handed out of its own memory (NVTX regions, framework allocator blocks).
inline bool is_pool_block(MemoryFamily f) { return f == MemoryFamily::PoolBlock; }
inline bool is_block_op(Api api) { return api_info(api).op != BlockOp::None; }

// The release that ends every block of a pool at once (nvtxMemHeapUnregister, nvtxMemHeapReset).
inline bool releases_whole_pool(Api api) {
  return api_info(api).op == BlockOp::ReleaseAll || api_info(api).op == BlockOp::Reset;
}

// The Api of a source's block operation (Api::Count when the source has no such operation).
inline Api block_api(MemorySource source, BlockOp op) {
  for (uint16_t id = kCudaApis; id < static_cast<uint16_t>(Api::Count); ++id) {
    if (kApiInfo[id].source == source && kApiInfo[id].op == op) return static_cast<Api>(id);
  }
  return Api::Count;
}

// How a pool gives back a block it handed out (nvtxMemRegionsUnregister, MemoryPool.free).
inline std::string_view take_back_name(MemorySource source) {
  const Api api = block_api(source, BlockOp::TakeBack);
  return api == Api::Count ? std::string_view("its pool's release") : api_info(api).name;
}

// Reservations and mappings are address space, not memory: they are leaks of their own,
// but their bytes are not added to the leaked-bytes total (the physical handle carries them).
// Memory another process owns (IPC mappings) is not this process's memory either, and a pool's
// blocks are memory the pool already holds.
inline bool owns_memory(MemoryFamily f) {
  return f != MemoryFamily::VmmReservation && f != MemoryFamily::VmmMapping && f != MemoryFamily::IpcMapping &&
         !is_resource(f) && !is_pool_block(f);
}

}  // namespace cuaudit
