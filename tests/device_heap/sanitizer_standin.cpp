// A stand-in for compute-sanitizer's libsanitizer-public.so, for running --device-heap without a
// GPU: it exports the functions the injection loads (sanitizer_api.h) and calls the callback the
// injection subscribed with, in the order the real library did on the H200 (docs/RESOURCES.md):
// module loaded, launch begin, the patches' device calls, synchronization. The "device" side is
// device_heap_program.cpp calling standin_device_call, which writes the context's buffer exactly
// as injection/device_heap_patches.cu does on the GPU.
#include <sys/stat.h>

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>

#include "device_heap_buffer.h"
#include "sanitizer_api.h"

namespace san = cuaudit::inject::sanitizer;

namespace {

san::Callback g_callback = nullptr;
void* g_callback_userdata = nullptr;
bool g_domains[16] = {};
std::string g_patches;                     // the file the injection asked to load
std::string g_malloc_patch, g_free_patch;  // the device functions it asked to patch in
const void* g_launch_userdata = nullptr;   // what the current launch was handed
CUcontext const kContext = reinterpret_cast<CUcontext>(0x1000);
int g_next_module = 0;

void call(int domain, int cbid, const void* data) {
  if (g_callback && g_domains[domain]) g_callback(g_callback_userdata, domain, cbid, data);
}

// Where each kernel's code is: a made-up device address per name.
uint64_t function_pc(const char* name) { return 0x7f0000000000ull + (std::hash<std::string>{}(name)&0xffff) * 0x10000; }

}  // namespace

extern "C" {

int sanitizerSubscribe(san::SubscriberHandle* handle, san::Callback callback, void* userdata) {
  g_callback = callback;
  g_callback_userdata = userdata;
  *handle = reinterpret_cast<san::SubscriberHandle>(0x1);
  return 0;
}
int sanitizerEnableDomain(uint32_t enable, san::SubscriberHandle, int domain) {
  if (domain < 0 || domain >= 16) return 1;
  g_domains[domain] = enable != 0;
  return 0;
}
int sanitizerAddPatchesFromFile(const char* path, CUcontext) {
  struct stat st {};
  if (stat(path, &st) != 0 || st.st_size == 0) return 1;  // SANITIZER_ERROR_INVALID_PARAMETER
  g_patches = path;
  return 0;
}
int sanitizerPatchInstructions(int id, CUmodule, const char* name) {
  if (g_patches.empty()) return 1;
  if (id == san::kDeviceSideMalloc) g_malloc_patch = name;
  if (id == san::kDeviceSideFree) g_free_patch = name;
  return 0;
}
int sanitizerPatchModule(CUmodule) { return g_malloc_patch.empty() ? 1 : 0; }
int sanitizerAllocHost(CUcontext, void** pointer, size_t bytes) {
  *pointer = aligned_alloc(64, (bytes + 63) / 64 * 64);
  return *pointer ? 0 : 2;
}
int sanitizerSetLaunchCallbackData(san::LaunchHandle, CUfunction, san::StreamHandle, const void* userdata) {
  g_launch_userdata = userdata;
  return 0;
}
int sanitizerGetFunctionPcAndSize(CUmodule, const char* name, uint64_t* pc, uint64_t* size) {
  *pc = function_pc(name);
  *size = 0x800;
  return 0;
}
int sanitizerGetResultString(int result, const char** text) {
  *text = result == 0 ? "success" : "stand-in error";
  return 0;
}

// --- what device_heap_program.cpp drives, as a CUDA program and its GPU would ---

// A module loads: its cubin names malloc when its code calls it. Returns its handle.
CUmodule standin_load_module(bool calls_malloc) {
  static const char with_malloc[] =
      "\x7f"
      "ELF....\0malloc\0free\0";
  static const char without[] =
      "\x7f"
      "ELF....\0vprintf\0";
  const CUmodule module = reinterpret_cast<CUmodule>(static_cast<uintptr_t>(0x2000 + 0x10 * ++g_next_module));
  san::ResourceModuleData data{kContext, module, calls_malloc ? sizeof with_malloc : sizeof without,
                               calls_malloc ? with_malloc : without, nullptr};
  call(san::kDomainResource, san::kModuleLoaded, &data);
  return module;
}

// A kernel launch begins; returns the userdata its patched calls get (null: not patched).
const void* standin_launch(CUmodule module, const char* kernel, uint32_t threads) {
  static uint64_t grid_id = 0;
  g_launch_userdata = nullptr;
  san::LaunchData data{};
  data.context = kContext;
  data.module = module;
  data.function = reinterpret_cast<CUfunction>(0x3000);
  data.function_name = kernel;
  data.grid[0] = data.grid[1] = data.grid[2] = 1;
  data.block[0] = threads;
  data.block[1] = data.block[2] = 1;
  data.grid_id = ++grid_id;
  data.launch = reinterpret_cast<san::LaunchHandle>(0x4000 + grid_id);
  call(san::kDomainLaunch, san::kLaunchBegin, &data);
  return g_launch_userdata;
}

// The kernel's code address `offset` bytes into `kernel`.
uint64_t standin_pc(const char* kernel, uint64_t offset) { return function_pc(kernel) + offset; }

// One patched device-side call, as the patch writes it on the GPU (device_heap_patches.cu).
void standin_device_call(const void* userdata, uint64_t kind, uint64_t pc, uint64_t address, uint64_t bytes) {
  const auto* slot = static_cast<const cuaudit::device_heap::LaunchSlot*>(userdata);
  if (!slot || !slot->buffer) return;
  cuaudit::device_heap::Buffer* buffer = slot->buffer;
  const unsigned long long i = __atomic_fetch_add(&buffer->reserved, 1ull, __ATOMIC_RELAXED);
  if (i >= buffer->capacity) return;
  cuaudit::device_heap::Call& c = buffer->calls[i];
  c.pc = pc;
  c.address = address;
  c.bytes = bytes;
  __atomic_store_n(&c.launch_and_kind, cuaudit::device_heap::pack_launch_and_kind(slot->launch_id, kind),
                   __ATOMIC_RELEASE);
}

// The program's own device or pinned memory, as the API's memory callbacks say it.
void standin_memory(int cbid, uint64_t address, uint64_t bytes, uint32_t flags) {
  san::ResourceMemoryData data{};
  data.address = address;
  data.size = bytes;
  data.context = kContext;
  data.flags = flags;
  call(san::kDomainResource, cbid, &data);
}

// The program's first CUDA call creates its context: the driver allocates device memory of the
// context's own meanwhile (512 bytes on the H100 and H200), which the memory callback reports too.
void standin_create_context() {
  struct {
    CUcontext context;
    int device;
  } data{kContext, 0};
  call(san::kDomainResource, san::kContextCreationStarting, &data);
  standin_memory(san::kDeviceMemoryAlloc, 0x7d00fff00000ull, 512, 0);
  call(san::kDomainResource, san::kContextCreationFinished, &data);
}

void standin_synchronize() {
  san::SynchronizeData data{kContext, nullptr, nullptr};
  call(san::kDomainSynchronize, san::kContextSynchronized, &data);
}

// What the injection asked of the library, for the test to check.
const char* standin_patch_names() {
  static std::string names;
  names = g_malloc_patch + " " + g_free_patch;
  return names.c_str();
}

}  // extern "C"
