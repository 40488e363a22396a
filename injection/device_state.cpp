#include "device_state.h"

#include <dlfcn.h>
#include <unistd.h>

#include <atomic>
#include <cstring>

#include "driver_api.h"
#include "event_clock.h"
#include "trace_writer.h"

namespace cuaudit::inject {
namespace {

std::atomic<bool> g_stream_ordered{false};

// The few NVML entry points needed, declared here (nvml.h is not part of the CUDA toolkit's
// headers); their ABI is stable: the _v2/_v3 names are the versions that take these layouts.
using NvmlDevice = void*;
struct NvmlProcessInfo {  // nvmlProcessInfo_v2_t, taken by nvmlDeviceGetComputeRunningProcesses_v3
  unsigned int pid;
  unsigned long long used_gpu_memory;
  unsigned int gpu_instance_id;
  unsigned int compute_instance_id;
};
constexpr unsigned long long kNvmlValueNotAvailable = ~0ull;

struct Nvml {
  int (*init)() = nullptr;
  int (*handle_by_pci_bus_id)(const char*, NvmlDevice*) = nullptr;
  int (*compute_processes)(NvmlDevice, unsigned int*, NvmlProcessInfo*) = nullptr;
  bool usable = false;
};

// Loaded at the first failed allocation, never unloaded. Null members: not available.
const Nvml& nvml() noexcept {
  static Nvml n = [] {
    Nvml out;
    void* library = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!library) return out;
    out.init = reinterpret_cast<int (*)()>(dlsym(library, "nvmlInit_v2"));
    out.handle_by_pci_bus_id =
        reinterpret_cast<int (*)(const char*, NvmlDevice*)>(dlsym(library, "nvmlDeviceGetHandleByPciBusId_v2"));
    out.compute_processes = reinterpret_cast<int (*)(NvmlDevice, unsigned int*, NvmlProcessInfo*)>(
        dlsym(library, "nvmlDeviceGetComputeRunningProcesses_v3"));
    out.usable = out.init && out.handle_by_pci_bus_id && out.compute_processes && out.init() == 0;
    return out;
  }();
  return n;
}

// Memory of the processes other than this one on `device`, as NVML sees them; false when NVML
// cannot say (not installed, no permission, or processes of other containers hidden).
bool other_processes_bytes(CUdevice device, uint64_t& bytes) noexcept {
  const Nvml& n = nvml();
  if (!n.usable || !driver().device_get_pci_bus_id) return false;
  char bus_id[32] = {};
  if (driver().device_get_pci_bus_id(bus_id, sizeof bus_id, device) != CUDA_SUCCESS) return false;
  NvmlDevice handle = nullptr;
  if (n.handle_by_pci_bus_id(bus_id, &handle) != 0) return false;
  NvmlProcessInfo processes[64];
  unsigned int count = 64;
  if (n.compute_processes(handle, &count, processes) != 0) return false;
  const auto self = static_cast<unsigned int>(getpid());
  bytes = 0;
  for (unsigned int i = 0; i < count && i < 64; ++i) {
    if (processes[i].pid != self && processes[i].used_gpu_memory != kNvmlValueNotAvailable)
      bytes += processes[i].used_gpu_memory;
  }
  return true;
}

bool pool_state(CUdevice device, trace::DeviceStateRecord& r) noexcept {
  const DriverApi& d = driver();
  if (!d.device_get_mem_pool || !d.mem_pool_get_attribute) return false;
  CUmemoryPool pool = nullptr;
  if (d.device_get_mem_pool(&pool, device) != CUDA_SUCCESS || !pool) return false;
  cuuint64_t value = 0;
  const struct {
    CUmemPool_attribute attribute;
    uint64_t* out;
  } fields[] = {{CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT, &r.pool_reserved},
                {CU_MEMPOOL_ATTR_USED_MEM_CURRENT, &r.pool_used},
                {CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH, &r.pool_reserved_high},
                {CU_MEMPOOL_ATTR_USED_MEM_HIGH, &r.pool_used_high}};
  for (const auto& f : fields) {
    if (d.mem_pool_get_attribute(pool, f.attribute, &value) != CUDA_SUCCESS) return false;
    *f.out = value;
  }
  return true;
}

void write_state(int32_t device, bool at_failure) noexcept {
  if (device < 0 || !driver().device_get) return;
  CUdevice handle = 0;
  if (driver().device_get(&handle, device) != CUDA_SUCCESS) return;
  trace::DeviceStateRecord r{};
  r.device = device;
  if (at_failure) r.flags |= trace::kStateAtFailedAllocation;
  if ((at_failure || stream_ordered_in_use()) && pool_state(handle, r)) r.flags |= trace::kStateHasPool;
  if (at_failure && other_processes_bytes(handle, r.other_processes_bytes)) r.flags |= trace::kStateHasOtherProcesses;
  r.seq = next_sequence();
  r.time_ns = monotonic_ns();
  trace_writer().append(r);
}

}  // namespace

void note_stream_ordered_use() noexcept {
  if (!g_stream_ordered.load(std::memory_order_relaxed)) g_stream_ordered.store(true, std::memory_order_relaxed);
}
bool stream_ordered_in_use() noexcept { return g_stream_ordered.load(std::memory_order_relaxed); }

void record_state_at_failed_allocation(int32_t device) noexcept { write_state(device, true); }

namespace {
std::atomic<uint64_t> g_devices_described{0};  // one bit per ordinal below 64
}  // namespace

void forget_device_info_in_child() noexcept { g_devices_described.store(0); }

void record_device_info(int32_t device) noexcept {
  std::atomic<uint64_t>& written = g_devices_described;
  if (device < 0 || device >= 64 || !driver().device_get) return;
  const uint64_t bit = uint64_t{1} << device;
  if (written.fetch_or(bit, std::memory_order_relaxed) & bit) return;
  CUdevice handle = 0;
  if (driver().device_get(&handle, device) != CUDA_SUCCESS) return;
  char name[256] = {};
  if (driver().device_get_name) driver().device_get_name(name, sizeof name - 1, handle);
  trace::DeviceInfoRecord r{};
  r.device = device;
  size_t total = 0;
  if (driver().device_total_mem && driver().device_total_mem(&total, handle) == CUDA_SUCCESS) r.total_bytes = total;
  r.name_bytes = static_cast<uint32_t>(strnlen(name, sizeof name));
  trace_writer().append_with_tail(r, name, r.name_bytes);
}

void record_pool_state(int32_t device) noexcept {
  if (stream_ordered_in_use()) write_state(device, false);
}

}  // namespace cuaudit::inject
