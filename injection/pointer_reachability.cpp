#include "pointer_reachability.h"

#include <atomic>
#include <cstring>

#include "driver_api.h"
#include "event_clock.h"
#include "readable_memory.h"
#include "stage_stats.h"

namespace cuaudit::inject {
namespace {

// For CUAUDIT_STATS=1: the driver's pointer queries, and those that named no range.
std::atomic<uint64_t> g_driver_queries{0};
std::atomic<uint64_t> g_single_address_ranges{0};

Reachability ask_driver(uint64_t value) noexcept {
  const StageTimer timer(Stage::DriverQuery);
  g_driver_queries.fetch_add(1, std::memory_order_relaxed);
  unsigned int memory_type = 0;
  CUdeviceptr start = 0;
  size_t size = 0;
  unsigned int managed = 0;  // the driver writes a bool: only the low byte
  CUdeviceptr device_pointer = 0;
  CUpointer_attribute attributes[] = {CU_POINTER_ATTRIBUTE_MEMORY_TYPE, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR,
                                      CU_POINTER_ATTRIBUTE_RANGE_SIZE, CU_POINTER_ATTRIBUTE_IS_MANAGED,
                                      CU_POINTER_ATTRIBUTE_DEVICE_POINTER};
  void* data[] = {&memory_type, &start, &size, &managed, &device_pointer};
  // Unknown pointers are not an error here: their attributes come back zero.
  const CUresult rc = driver().pointer_get_attributes ? driver().pointer_get_attributes(5, attributes, data, value)
                                                      : CUDA_ERROR_NOT_SUPPORTED;
  Reachability r{};
  r.result = static_cast<int32_t>(rc);
  r.memory_type = static_cast<uint8_t>(memory_type);
  r.reachable = rc == CUDA_SUCCESS && (memory_type == CU_MEMORYTYPE_DEVICE || memory_type == CU_MEMORYTYPE_ARRAY ||
                                       memory_type == CU_MEMORYTYPE_UNIFIED || (managed & 0xff) != 0 ||
                                       (memory_type == CU_MEMORYTYPE_HOST && device_pointer != 0));
  if (r.reachable && !(start && size) && driver().mem_get_address_range) {
    driver().mem_get_address_range(&start, &size, value);  // the batch query left the range out
  }
  if (r.reachable) {
    r.start = start && size ? start : value;
    r.end = start && size ? start + size : value + 1;
    if (!(start && size)) g_single_address_ranges.fetch_add(1, std::memory_order_relaxed);
  } else {
    r.host_readable = readable_memory_cached(value);
  }
  return r;
}

// Per thread: ranges the driver confirmed since the last release anywhere, and values it did not
// know since the last allocation anywhere.
struct ReachabilityCache {
  uint64_t release_epoch = UINT64_MAX;
  uint64_t start[16] = {}, end[16] = {};
  unsigned next_range = 0;
  uint64_t allocation_epoch = UINT64_MAX;
  uint64_t bad_value[8] = {};
  Reachability bad[8] = {};
  unsigned next_bad = 0;
};
thread_local ReachabilityCache tls_reach;

// Devices the process has contexts on, one bit each (ordinals below 64).
std::atomic<uint64_t> g_context_devices{0};

// Peer access the program enabled: bit `to` of g_peer[from]; every change bumps the generation,
// which empties the threads' peer caches.
std::atomic<uint64_t> g_peer[64];
std::atomic<uint64_t> g_peer_generation{0};

bool peer_enabled(int8_t from, int8_t to) noexcept {
  return from >= 0 && from < 64 && to >= 0 && to < 64 &&
         (g_peer[from].load(std::memory_order_relaxed) & (uint64_t{1} << to));
}

// Per thread, in processes with several devices: device-memory ranges already checked for access
// from one launching device, until memory is released anywhere.
struct PeerCache {
  uint64_t release_epoch = UINT64_MAX;
  uint64_t generation = UINT64_MAX;
  uint64_t start[16] = {}, end[16] = {};
  int8_t from[16] = {}, owner[16] = {};
  bool denied[16] = {};
  unsigned next = 0;
};
thread_local PeerCache tls_peer;

}  // namespace

// The driver's verdict on `value`, from the cache when nothing changed since it was asked.
const Reachability* unreachable(uint64_t value) noexcept {
  ReachabilityCache& c = tls_reach;
  const uint64_t released = release_epoch();
  if (c.release_epoch != released) {
    c.release_epoch = released;
    memset(c.start, 0, sizeof c.start);  // empty ranges
    memset(c.end, 0, sizeof c.end);
  }
  for (int i = 0; i < 16; ++i) {
    if (value - c.start[i] < c.end[i] - c.start[i]) return nullptr;
  }
  const uint64_t allocated = allocation_epoch();
  if (c.allocation_epoch != allocated) {
    c.allocation_epoch = allocated;
    memset(c.bad_value, 0, sizeof c.bad_value);
  }
  for (int i = 0; i < 8; ++i) {
    if (c.bad_value[i] == value) return &c.bad[i];
  }
  const Reachability r = ask_driver(value);
  if (r.reachable) {
    const unsigned i = c.next_range++ % 16;
    c.start[i] = r.start;
    c.end[i] = r.end;
    return nullptr;
  }
  const unsigned i = c.next_bad++ % 8;
  c.bad_value[i] = value;
  c.bad[i] = r;
  return &c.bad[i];
}

bool several_devices() noexcept {
  const uint64_t d = g_context_devices.load(std::memory_order_relaxed);
  return d & (d - 1);
}

// Whether the device running the kernel (`launch_device`) may not access the memory at `value`,
// which the driver already confirmed is reachable memory; `owner`: the device it is on. Asks the
// driver for the access the current context's device has (CU_POINTER_ATTRIBUTE_ACCESS_FLAGS): that
// covers peer access, VMM access rights and imported memory alike.
bool peer_denied(uint64_t value, int8_t launch_device, int8_t& owner) noexcept {
  PeerCache& c = tls_peer;
  const uint64_t released = release_epoch(), generation = g_peer_generation.load(std::memory_order_acquire);
  if (c.release_epoch != released || c.generation != generation) {
    c.release_epoch = released;
    c.generation = generation;
    memset(c.start, 0, sizeof c.start);
    memset(c.end, 0, sizeof c.end);
  }
  for (int i = 0; i < 16; ++i) {
    if (value - c.start[i] < c.end[i] - c.start[i] && c.from[i] == launch_device) {
      owner = c.owner[i];
      return c.denied[i];
    }
  }
  if (!driver().pointer_get_attributes) return false;
  g_driver_queries.fetch_add(1, std::memory_order_relaxed);
  int ordinal = -1;
  unsigned int memory_type = 0, managed = 0, legacy = 0;
  unsigned long long access = 0;  // CUmemAccess_flags, written as an int-sized enum
  CUdeviceptr start = 0;
  size_t size = 0;
  CUpointer_attribute attributes[] = {CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
                                      CU_POINTER_ATTRIBUTE_IS_MANAGED,
                                      CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
                                      CU_POINTER_ATTRIBUTE_ACCESS_FLAGS,
                                      CU_POINTER_ATTRIBUTE_RANGE_START_ADDR,
                                      CU_POINTER_ATTRIBUTE_RANGE_SIZE,
                                      CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE};
  void* data[] = {&memory_type, &managed, &ordinal, &access, &start, &size, &legacy};
  if (driver().pointer_get_attributes(7, attributes, data, value) != CUDA_SUCCESS) return false;  // cannot tell
  const bool other_device =
      memory_type == CU_MEMORYTYPE_DEVICE && !(managed & 0xff) && ordinal >= 0 && ordinal != launch_device;
  owner = static_cast<int8_t>(ordinal);
  // cudaMalloc/cuMemAlloc memory ("legacy IPC capable") is reachable from another device only
  // through peer access, which the program enables with cudaDeviceEnablePeerAccess or
  // cuCtxEnablePeerAccess; the driver's access flags say read-write for it either way (seen on
  // the H200). VMM and pool memory carry access rights of their own (cuMemSetAccess,
  // cudaMemPoolSetAccess), which the access flags report for the current context's device.
  const bool denied = other_device && ((legacy & 0xff) ? !peer_enabled(launch_device, owner)
                                                       : (access & 0xffffffffu) == CU_MEM_ACCESS_FLAGS_PROT_NONE);
  const unsigned i = c.next++ % 16;
  c.start[i] = start && size ? start : value;
  c.end[i] = start && size ? start + size : value + 1;
  c.from[i] = launch_device;
  c.owner[i] = owner;
  c.denied[i] = denied;
  return denied;
}

// The device of the calling thread's current context: the one the launch runs on.
int8_t current_device() noexcept {
  CUdevice device = -1;
  if (!driver().ctx_get_device || driver().ctx_get_device(&device) != CUDA_SUCCESS) return -1;
  return static_cast<int8_t>(device);
}

void note_peer_access(int32_t from, int32_t to, bool enabled) noexcept {
  if (from < 0 || from >= 64 || to < 0 || to >= 64) return;
  if (enabled) {
    g_peer[from].fetch_or(uint64_t{1} << to, std::memory_order_relaxed);
  } else {
    g_peer[from].fetch_and(~(uint64_t{1} << to), std::memory_order_relaxed);
  }
  g_peer_generation.fetch_add(1, std::memory_order_acq_rel);  // every thread's cached answers are stale
}

void launch_checks_context_created(int32_t device) noexcept {
  if (device >= 0 && device < 64) g_context_devices.fetch_or(uint64_t{1} << device, std::memory_order_relaxed);
}

uint64_t driver_pointer_queries() noexcept { return g_driver_queries.load(std::memory_order_relaxed); }
uint64_t single_address_ranges() noexcept { return g_single_address_ranges.load(std::memory_order_relaxed); }

}  // namespace cuaudit::inject
