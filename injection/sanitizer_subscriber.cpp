#include "sanitizer_subscriber.h"

#include <dlfcn.h>
#include <pthread.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>

#include "call_recorder.h"
#include "device_heap_calls.h"
#include "driver_api.h"
#include "environment.h"
#include "in_target_log.h"
#include "kernel_code.h"
#include "notice_writer.h"
#include "sanitizer_api.h"

namespace cuaudit::inject {
namespace {

using device_heap::Buffer;
using device_heap::LaunchSlot;

constexpr char kMallocPatch[] = "cuaudit_device_malloc";  // device_heap_patches.cu
constexpr char kFreePatch[] = "cuaudit_device_free";
// Launches in flight share these slots round-robin: a launch's calls are named by the slot's
// launch id, so more launches than this in flight at once (never synchronized) would mix names.
constexpr uint64_t kLaunchSlots = 65536;
constexpr int kMaxContexts = 64;
constexpr size_t kModuleTable = 4096;  // patched modules (open addressing; a power of two)

sanitizer::Api g_api;
sanitizer::SubscriberHandle g_subscriber = nullptr;
char g_patches[4096];
uint64_t g_capacity = uint64_t(1) << 20;
std::atomic<uint64_t> g_next_launch{0};
pthread_mutex_t g_patch_lock = PTHREAD_MUTEX_INITIALIZER;  // the API's patch calls must be serialized

// What one context needs: its patches loaded once, its buffer and launch slots.
struct ContextState {
  std::atomic<CUcontext> context{nullptr};
  bool patches_loaded = false;
  bool failed = false;  // said once; its modules stay unpatched
  LaunchSlot* slots = nullptr;
  Buffer* calls = nullptr;
  std::atomic<DeviceHeapDrain*> drain{nullptr};  // published last: synchronizations on other threads drain it
  alignas(DeviceHeapDrain) unsigned char drain_storage[sizeof(DeviceHeapDrain)];
};
ContextState g_contexts[kMaxContexts];
std::atomic<int> g_context_count{0};

std::atomic<CUmodule> g_patched[kModuleTable];

thread_local bool tls_own_call = false;  // inside our own API calls: their allocations are not the program's
// Between a context's creation starting and finishing on this thread: what the driver allocates
// then (512 bytes on the H100 and H200, inside the program's first CUDA call) is the context's own.
thread_local bool tls_creating_context = false;

size_t module_slot(CUmodule m) noexcept { return (reinterpret_cast<uintptr_t>(m) >> 4) * 0x9E3779B97F4A7C15ull >> 52; }

void remember_patched(CUmodule m) noexcept {
  for (size_t i = module_slot(m), n = 0; n < kModuleTable; ++n, i = (i + 1) & (kModuleTable - 1)) {
    CUmodule expected = nullptr;
    if (g_patched[i].compare_exchange_strong(expected, m) || expected == m) return;
  }
}

bool is_patched(CUmodule m) noexcept {
  for (size_t i = module_slot(m), n = 0; n < kModuleTable; ++n, i = (i + 1) & (kModuleTable - 1)) {
    const CUmodule seen = g_patched[i].load(std::memory_order_acquire);
    if (seen == m) return true;
    if (!seen) return false;
  }
  return false;
}

// The context's state; made on first use (under g_patch_lock: only module loads make one).
ContextState* context_state(CUcontext context, bool create) noexcept {
  const int n = g_context_count.load(std::memory_order_acquire);
  for (int i = 0; i < n; ++i)
    if (g_contexts[i].context.load(std::memory_order_relaxed) == context) return &g_contexts[i];
  if (!create || n == kMaxContexts) return nullptr;
  g_contexts[n].context.store(context, std::memory_order_relaxed);
  g_context_count.store(n + 1, std::memory_order_release);
  return &g_contexts[n];
}

// A module whose code never calls device malloc is left as it is: its kernels cost nothing more.
// (The cubin's string table names malloc when its code calls it; free alone is not looked for.)
bool calls_device_malloc(const sanitizer::ResourceModuleData& m) noexcept {
  if (!m.cubin || m.cubin_bytes == 0) return true;  // cannot tell: patch it
  return memmem(m.cubin, m.cubin_bytes, "malloc", 6) != nullptr;
}

// The context's patches and buffer, once. False (said once) when the API refuses them.
bool prepare_context(ContextState& state, CUcontext context) noexcept {
  if (state.patches_loaded) return true;
  if (state.failed) return false;
  const sanitizer::Result loaded = g_api.add_patches_from_file(g_patches, context);
  void* buffer = nullptr;
  void* slots = nullptr;
  const sanitizer::Result a = loaded == sanitizer::kSuccess
                                  ? g_api.alloc_host(context, &buffer, device_heap::buffer_bytes(g_capacity))
                                  : loaded;
  const sanitizer::Result b =
      a == sanitizer::kSuccess ? g_api.alloc_host(context, &slots, kLaunchSlots * sizeof(LaunchSlot)) : a;
  if (b != sanitizer::kSuccess || !buffer || !slots) {
    char text[768];
    snprintf(text, sizeof text,
             "device-heap mode: cannot prepare a context (%s %s): its kernels' device malloc and free are not recorded",
             loaded != sanitizer::kSuccess ? "loading the patches" : "allocating the call buffer",
             sanitizer::result_text(g_api, b));
    log_error("%s", text);
    write_notice(trace::NoticeCode::DroppedEvents, text);
    state.failed = true;
    return false;
  }
  auto* calls = static_cast<Buffer*>(buffer);
  memset(calls, 0, device_heap::buffer_bytes(g_capacity));
  calls->capacity = g_capacity;
  memset(slots, 0, kLaunchSlots * sizeof(LaunchSlot));
  state.slots = static_cast<LaunchSlot*>(slots);
  state.calls = calls;
  state.drain.store(new (state.drain_storage) DeviceHeapDrain(calls), std::memory_order_release);
  state.patches_loaded = true;
  return true;
}

void on_module_loaded(const sanitizer::ResourceModuleData& m) noexcept {
  if (!calls_device_malloc(m)) return;
  pthread_mutex_lock(&g_patch_lock);
  // The API allocates device memory of its own while it loads patches (512 bytes on the H100,
  // reported through the memory callbacks on this thread): not the program's.
  tls_own_call = true;
  ContextState* state = context_state(m.context, true);
  if (state && prepare_context(*state, m.context)) {
    const sanitizer::Result a = g_api.patch_instructions(sanitizer::kDeviceSideMalloc, m.module, kMallocPatch);
    const sanitizer::Result b = g_api.patch_instructions(sanitizer::kDeviceSideFree, m.module, kFreePatch);
    const sanitizer::Result c = g_api.patch_module(m.module);
    if (a == sanitizer::kSuccess && b == sanitizer::kSuccess && c == sanitizer::kSuccess) {
      remember_patched(m.module);
      // Its code, kept beside the trace: the tool reads its calls' source lines from its line table.
      static std::atomic<uint32_t> next_module{0};
      cuaudit::inject::on_module_loaded(next_module.fetch_add(1, std::memory_order_relaxed) + 1, m.cubin,
                                        m.cubin_bytes);
    } else {
      char text[512];
      snprintf(
          text, sizeof text,
          "device-heap mode: a module could not be patched (%s); its kernels' device malloc and free are not recorded",
          sanitizer::result_text(g_api, a != sanitizer::kSuccess   ? a
                                        : b != sanitizer::kSuccess ? b
                                                                   : c));
      write_notice(trace::NoticeCode::DroppedEvents, text);
    }
  }
  tls_own_call = false;
  pthread_mutex_unlock(&g_patch_lock);
}

void on_launch(const sanitizer::LaunchData& l) noexcept {
  if (!is_patched(l.module)) return;
  ContextState* state = context_state(l.context, false);
  if (!state || !state->patches_loaded) return;
  DeviceHeapLaunch launch;
  launch.launch_id = g_next_launch.fetch_add(1, std::memory_order_relaxed) + 1;
  LaunchSlot& slot = state->slots[launch.launch_id % kLaunchSlots];
  slot.launch_id = launch.launch_id;
  slot.buffer = state->calls;
  g_api.set_launch_callback_data(l.launch, l.function, l.stream_handle, &slot);
  if (l.function_name)
    g_api.get_function_pc_and_size(l.module, l.function_name, &launch.function_pc, &launch.function_bytes);
  size_t heap = 0;
  if (driver().ctx_get_limit && driver().ctx_get_limit(&heap, CU_LIMIT_MALLOC_HEAP_SIZE) == CUDA_SUCCESS)
    launch.heap_bytes = heap;
  memcpy(launch.grid, l.grid, sizeof launch.grid);
  memcpy(launch.block, l.block, sizeof launch.block);
  launch.device = static_cast<int32_t>(l.device);
  launch.name = l.function_name;
  record_device_heap_launch(launch);
}

void drain_all() noexcept {
  const int n = g_context_count.load(std::memory_order_acquire);
  for (int i = 0; i < n; ++i)
    if (DeviceHeapDrain* drain = g_contexts[i].drain.load(std::memory_order_acquire)) drain->drain();
}

// The program's own allocations, from the API's memory callbacks: named by the kind of memory
// (the callbacks do not say which call made them).
void on_memory(int cbid, const sanitizer::ResourceMemoryData& d) noexcept {
  if (tls_own_call || tls_creating_context || (d.flags & sanitizer::kFlagModule)) return;  // not the program's
  const bool host = cbid == sanitizer::kHostMemoryAlloc || cbid == sanitizer::kHostMemoryFree;
  const bool alloc = cbid == sanitizer::kDeviceMemoryAlloc || cbid == sanitizer::kHostMemoryAlloc;
  Api api = host ? Api::cudaMallocHost : (d.flags & sanitizer::kFlagManaged) ? Api::cudaMallocManaged : Api::cudaMalloc;
  if (!alloc) api = host ? Api::cudaFreeHost : Api::cudaFree;
  on_call_enter(api);
  ApiCall call;
  call.api = api;
  call.key = d.address;
  call.bytes = alloc ? d.size : 0;
  call.device = static_cast<int32_t>(d.device);
  on_call_exit(call);
}

void on_callback(void*, int domain, int cbid, const void* data) noexcept {
  if (!data) return;
  if (domain == sanitizer::kDomainLaunch && cbid == sanitizer::kLaunchBegin) {
    on_launch(*static_cast<const sanitizer::LaunchData*>(data));
  } else if (domain == sanitizer::kDomainSynchronize) {
    drain_all();  // the synchronized work's calls are whole now
  } else if (domain == sanitizer::kDomainResource) {
    if (cbid == sanitizer::kContextCreationStarting || cbid == sanitizer::kContextCreationFinished) {
      tls_creating_context = cbid == sanitizer::kContextCreationStarting;
    } else if (cbid == sanitizer::kModuleLoaded) {
      on_module_loaded(*static_cast<const sanitizer::ResourceModuleData*>(data));
    } else if (cbid >= sanitizer::kDeviceMemoryAlloc && cbid <= sanitizer::kHostMemoryFree) {
      on_memory(cbid, *static_cast<const sanitizer::ResourceMemoryData*>(data));
    }
  }
}

// The patches' fatbin: the environment's, else beside this library.
bool find_patches(char* error, size_t error_bytes) noexcept {
  const char* configured = getenv(env_name(EnvVar::DeviceHeapPatches));
  if (configured && *configured) {
    snprintf(g_patches, sizeof g_patches, "%s", configured);
  } else {
    Dl_info info{};
    if (!dladdr(reinterpret_cast<void*>(&subscribe_device_heap), &info) || !info.dli_fname) {
      snprintf(error, error_bytes, "device-heap mode: cannot tell where the injection library is; set %s",
               env_name(EnvVar::DeviceHeapPatches));
      return false;
    }
    const char* slash = strrchr(info.dli_fname, '/');
    snprintf(g_patches, sizeof g_patches, "%.*scuaudit_device_heap_patches.fatbin",
             static_cast<int>(slash ? slash - info.dli_fname + 1 : 0), info.dli_fname);
  }
  if (access(g_patches, R_OK) != 0) {
    snprintf(error, error_bytes, "device-heap mode: the patches %s cannot be read (%s)", g_patches, strerror(errno));
    return false;
  }
  return true;
}

}  // namespace

bool subscribe_device_heap(char* error, size_t error_bytes) noexcept {
  const char* library = getenv(env_name(EnvVar::SanitizerLibrary));
  if (!library || !*library) {
    snprintf(error, error_bytes,
             "device-heap mode: %s is not set (the launcher sets it to compute-sanitizer's libsanitizer-public.so)",
             env_name(EnvVar::SanitizerLibrary));
    return false;
  }
  if (!find_patches(error, error_bytes) || !sanitizer::load(library, g_api, error, error_bytes)) return false;
  if (const char* calls = getenv(env_name(EnvVar::DeviceHeapCalls)); calls && *calls) {
    char* end = nullptr;
    const unsigned long long n = strtoull(calls, &end, 10);
    if (*end == '\0' && n >= 1024 && n <= (uint64_t(1) << 28))
      g_capacity = n;
    else
      log_warning("ignoring %s=%s (expected 1024 to 268435456 calls)", env_name(EnvVar::DeviceHeapCalls), calls);
  }
  const sanitizer::Result r = g_api.subscribe(&g_subscriber, on_callback, nullptr);
  if (r != sanitizer::kSuccess) {
    snprintf(error, error_bytes,
             "device-heap mode: sanitizerSubscribe failed (%s): another CUDA tool (compute-sanitizer, Nsight) may hold "
             "the process's tool slot",
             sanitizer::result_text(g_api, r));
    return false;
  }
  for (int domain : {sanitizer::kDomainResource, sanitizer::kDomainSynchronize, sanitizer::kDomainLaunch}) {
    if (const sanitizer::Result e = g_api.enable_domain(1, g_subscriber, domain); e != sanitizer::kSuccess) {
      snprintf(error, error_bytes, "device-heap mode: sanitizerEnableDomain(%d) failed (%s)", domain,
               sanitizer::result_text(g_api, e));
      return false;
    }
  }
  write_notice(
      trace::NoticeCode::DeviceHeapMode,
      "device-heap mode (--device-heap): kernels' device-side malloc and free are recorded through the Compute "
      "Sanitizer API instead of CUPTI; host allocations are named by the kind of memory (cudaMalloc, "
      "cudaMallocHost, cudaMallocManaged) whichever call made them, failed calls are not seen, and launch "
      "parameters, unchecked errors, graphs and pools are not checked in this run");
  return true;
}

void flush_device_heap() noexcept {
  drain_all();
  uint64_t dropped = 0;
  const int n = g_context_count.load(std::memory_order_acquire);
  for (int i = 0; i < n; ++i)
    if (DeviceHeapDrain* drain = g_contexts[i].drain.load(std::memory_order_acquire)) dropped += drain->dropped();
  if (dropped) {
    char text[256];
    snprintf(text, sizeof text,
             "%llu device-side malloc/free call(s) did not fit the buffer of %llu per context and were not recorded "
             "(raise %s)",
             static_cast<unsigned long long>(dropped), static_cast<unsigned long long>(g_capacity),
             env_name(EnvVar::DeviceHeapCalls));
    write_notice(trace::NoticeCode::DroppedEvents, text);
  }
}

}  // namespace cuaudit::inject
