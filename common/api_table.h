// The tracked CUDA APIs and what they do to memory: shared by the injection and the tool.
#pragma once

#include <cstddef>
#include <cstdint>
#include <iterator>
#include <string_view>

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
  PoolBlock,  // blocks a pool handed out: addresses inside memory the pool itself allocated
};
inline constexpr size_t kKeySpaces = static_cast<size_t>(KeySpace::PoolBlock) + 1;
inline constexpr bool is_memory_space(KeySpace s) { return s <= KeySpace::VmmMapping; }

enum class Api : uint16_t {
#define CUAUDIT_API(id, name, role, family, space) id,
#include "api_list.inc"
#undef CUAUDIT_API
  Count
};

struct ApiInfo {
  std::string_view name;
  ApiRole role;
  MemoryFamily family;
  KeySpace space;
};

inline constexpr ApiInfo kApiInfo[] = {
#define CUAUDIT_API(id, name, role, family, space) {name, ApiRole::role, MemoryFamily::family, KeySpace::space},
#include "api_list.inc"
#undef CUAUDIT_API
};
static_assert(std::size(kApiInfo) == static_cast<size_t>(Api::Count), "kApiInfo must list every Api");

inline const ApiInfo* api_info(uint16_t id) { return id < static_cast<uint16_t>(Api::Count) ? &kApiInfo[id] : nullptr; }
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

// The release that ends every block of a pool at once (nvtxMemHeapUnregister, nvtxMemHeapReset).
inline bool releases_whole_pool(Api api) { return api == Api::nvtxMemHeapUnregister || api == Api::nvtxMemHeapReset; }

// Reservations and mappings are address space, not memory: they are leaks of their own,
// but their bytes are not added to the leaked-bytes total (the physical handle carries them).
// Memory another process owns (IPC mappings) is not this process's memory either, and a pool's
// blocks are memory the pool already holds.
inline bool owns_memory(MemoryFamily f) {
  return f != MemoryFamily::VmmReservation && f != MemoryFamily::VmmMapping && f != MemoryFamily::IpcMapping &&
         !is_resource(f) && !is_pool_block(f);
}

}  // namespace cuaudit
