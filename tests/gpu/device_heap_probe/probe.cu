// Issue 33's first question, asked on the GPU machine: can one process hold a CUPTI subscriber
// (what cuaudit's injection uses) and a Sanitizer API subscriber at the same time, in either order,
// and does patching device-side malloc/free work there? Built there by probe.sh against the
// toolkit's own Sanitizer API headers (the development machines have none).
// Usage: probe MODE PATCHES.fatbin
//   none             no subscriber: the kernels alone (for compute-sanitizer --leak-check full)
//   cupti-first      cuptiSubscribe, then sanitizerSubscribe
//   sanitizer-first  sanitizerSubscribe, then cuptiSubscribe
//   sanitizer-only   sanitizerSubscribe alone before any CUDA call (under cuaudit, its injection's
//                    CUPTI subscriber comes after, at cuInit)
//   sanitizer-late   the CUDA runtime first (under cuaudit: its CUPTI subscriber first), then
//                    sanitizerSubscribe
//   memory-events    sanitizer-only, printing each resource callback in order (context creation,
//                    modules, memory with size and flags): which allocations are the program's
// Prints each subscribe's result, the CUPTI callbacks seen, the device-heap events the patches
// recorded, and what an empty launch costs in this mode.
#include <cuda.h>
#include <cuda_runtime.h>
#include <sanitizer.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>

#include "probe_events.h"

// probe_cupti.cpp
bool subscribe_cupti();
extern std::atomic<unsigned long long> cupti_runtime_calls, cupti_launches;

namespace {

std::string patches_path;
std::atomic<uint64_t> modules_patched{0}, sanitizer_launches{0};
ProbeEvents* events = nullptr;  // mapped host memory, one buffer for every launch

const char* sanitizer_text(SanitizerResult r) {
  const char* s = nullptr;
  sanitizerGetResultString(r, &s);
  return s ? s : "?";
}

void on_module(const Sanitizer_ResourceModuleData* m) {
  SanitizerResult r = sanitizerAddPatchesFromFile(patches_path.c_str(), m->context);
  if (r != SANITIZER_SUCCESS) {
    std::printf("sanitizerAddPatchesFromFile: %s\n", sanitizer_text(r));
    return;
  }
  const SanitizerResult a =
      sanitizerPatchInstructions(SANITIZER_INSTRUCTION_DEVICE_SIDE_MALLOC, m->module, "probe_device_malloc");
  const SanitizerResult b =
      sanitizerPatchInstructions(SANITIZER_INSTRUCTION_DEVICE_SIDE_FREE, m->module, "probe_device_free");
  r = sanitizerPatchModule(m->module);
  if (a != SANITIZER_SUCCESS || b != SANITIZER_SUCCESS || r != SANITIZER_SUCCESS) {
    std::printf("patching a module: malloc %s, free %s, module %s\n", sanitizer_text(a), sanitizer_text(b),
                sanitizer_text(r));
    return;
  }
  ++modules_patched;
}

void on_launch(const Sanitizer_LaunchData* l) {
  ++sanitizer_launches;
  if (!events) {
    const SanitizerResult r = sanitizerAllocHost(l->context, reinterpret_cast<void**>(&events), sizeof(ProbeEvents));
    if (r != SANITIZER_SUCCESS) {
      std::printf("sanitizerAllocHost: %s\n", sanitizer_text(r));
      events = nullptr;
      return;
    }
    std::memset(events, 0, sizeof(ProbeEvents));
  }
  sanitizerSetLaunchCallbackData(l->hLaunch, l->function, l->hStream, events);
}

bool print_resources = false;
thread_local bool creating_context = false;

void print_resource(Sanitizer_CallbackId cbid, const void* data) {
  switch (cbid) {
    case SANITIZER_CBID_RESOURCE_CONTEXT_CREATION_STARTING:
      creating_context = true;
      std::printf("resource: context creation starting\n");
      break;
    case SANITIZER_CBID_RESOURCE_CONTEXT_CREATION_FINISHED:
      creating_context = false;
      std::printf("resource: context creation finished\n");
      break;
    case SANITIZER_CBID_RESOURCE_MODULE_LOADED:
      std::printf("resource: module loaded\n");
      break;
    case SANITIZER_CBID_RESOURCE_DEVICE_MEMORY_ALLOC:
    case SANITIZER_CBID_RESOURCE_DEVICE_MEMORY_FREE:
    case SANITIZER_CBID_RESOURCE_HOST_MEMORY_ALLOC:
    case SANITIZER_CBID_RESOURCE_HOST_MEMORY_FREE: {
      const auto* m = static_cast<const Sanitizer_ResourceMemoryData*>(data);
      std::printf("resource: memory cbid %d size %llu flags 0x%x permissions 0x%x%s\n", static_cast<int>(cbid),
                  static_cast<unsigned long long>(m->size), static_cast<unsigned>(m->flags),
                  static_cast<unsigned>(m->permissions), creating_context ? " (during context creation)" : "");
      break;
    }
    default:
      std::printf("resource: cbid %d\n", static_cast<int>(cbid));
  }
}

void on_sanitizer(void*, Sanitizer_CallbackDomain domain, Sanitizer_CallbackId cbid, const void* data) {
  if (print_resources && domain == SANITIZER_CB_DOMAIN_RESOURCE && data) print_resource(cbid, data);
  if (print_resources && domain == SANITIZER_CB_DOMAIN_LAUNCH && cbid == SANITIZER_CBID_LAUNCH_BEGIN)
    std::printf("launch\n");
  if (domain == SANITIZER_CB_DOMAIN_RESOURCE && cbid == SANITIZER_CBID_RESOURCE_MODULE_LOADED)
    on_module(static_cast<const Sanitizer_ResourceModuleData*>(data));
  if (domain == SANITIZER_CB_DOMAIN_LAUNCH && cbid == SANITIZER_CBID_LAUNCH_BEGIN)
    on_launch(static_cast<const Sanitizer_LaunchData*>(data));
}

bool subscribe_sanitizer() {
  Sanitizer_SubscriberHandle sub;
  const SanitizerResult r = sanitizerSubscribe(&sub, on_sanitizer, nullptr);
  std::printf("sanitizerSubscribe: %d (%s)\n", static_cast<int>(r), sanitizer_text(r));
  if (r != SANITIZER_SUCCESS) return false;
  const SanitizerResult a = sanitizerEnableDomain(1, sub, SANITIZER_CB_DOMAIN_RESOURCE);
  const SanitizerResult b = sanitizerEnableDomain(1, sub, SANITIZER_CB_DOMAIN_LAUNCH);
  if (a != SANITIZER_SUCCESS || b != SANITIZER_SUCCESS)
    std::printf("sanitizerEnableDomain: resource %s, launch %s\n", sanitizer_text(a), sanitizer_text(b));
  return true;
}

__device__ void* kept[4 * 256];

__global__ void leak_nodes(int launch) {  // one 16-byte node per thread, never freed
  kept[launch * 256 + threadIdx.x] = malloc(16);
}

__global__ void alloc_free() {  // one 32-byte scratch per thread, freed
  void* p = malloc(32);
  free(p);
}

__global__ void exhaust(void** out) {  // more than the default 8 MiB heap: malloc returns NULL
  *out = malloc(size_t(1) << 30);
}

__global__ void empty() {}

double launch_cost_us() {
  constexpr int kLaunches = 20000;
  empty<<<1, 1>>>();
  cudaDeviceSynchronize();
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < kLaunches; ++i) empty<<<1, 1>>>();
  cudaDeviceSynchronize();
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count() / kLaunches;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "none";
  patches_path = argc > 2 ? argv[2] : "probe_patches.fatbin";
  std::printf("mode %s\n", mode.c_str());
  bool cupti = false, sanitizer = false;
  if (mode == "cupti-first") {
    cupti = subscribe_cupti();
    sanitizer = subscribe_sanitizer();
  } else if (mode == "sanitizer-first") {
    sanitizer = subscribe_sanitizer();
    cupti = subscribe_cupti();
  } else if (mode == "sanitizer-only") {
    sanitizer = subscribe_sanitizer();
  } else if (mode == "memory-events") {
    print_resources = true;
    sanitizer = subscribe_sanitizer();
  } else if (mode == "sanitizer-late") {
    cudaFree(nullptr);
    sanitizer = subscribe_sanitizer();
  } else if (mode != "none") {
    std::printf("unknown mode %s\n", mode.c_str());
    return 2;
  }
  void* leaked_on_host_side = nullptr;
  cudaMalloc(&leaked_on_host_side, 1 << 20);  // a host-side leak too: under cuaudit, CUPTI still sees it
  for (int launch = 0; launch < 4; ++launch) leak_nodes<<<1, 256>>>(launch);
  alloc_free<<<1, 256>>>();
  void** out = nullptr;
  cudaMalloc(&out, sizeof(void*));
  exhaust<<<1, 1>>>(out);
  const cudaError_t sync = cudaDeviceSynchronize();
  std::printf("kernels: %s\n", cudaGetErrorString(sync));
  const double cost = launch_cost_us();
  std::printf("subscribed: cupti %d, sanitizer %d\n", cupti, sanitizer);
  std::printf("cupti: %llu runtime calls, %llu cudaLaunchKernel\n", cupti_runtime_calls.load(), cupti_launches.load());
  std::printf("sanitizer: %llu module(s) patched, %llu launch callbacks\n",
              static_cast<unsigned long long>(modules_patched), static_cast<unsigned long long>(sanitizer_launches));
  if (events) {
    uint64_t mallocs = 0, frees = 0, nulls = 0;
    const uint32_t n = events->count < kProbeEventCapacity ? events->count : kProbeEventCapacity;
    uint64_t first_pc = 0;
    for (uint32_t i = 0; i < n; ++i) {
      const ProbeEvent& e = events->events[i];
      if (e.kind == kProbeMalloc) {
        ++mallocs;
        if (!e.address) ++nulls;
        if (!first_pc) first_pc = e.pc;
      }
      if (e.kind == kProbeFree) ++frees;
    }
    std::printf(
        "device heap events: %u recorded (capacity %u): %llu malloc (%llu returned NULL), %llu free; "
        "first malloc pc 0x%llx\n",
        events->count, kProbeEventCapacity, static_cast<unsigned long long>(mallocs),
        static_cast<unsigned long long>(nulls), static_cast<unsigned long long>(frees),
        static_cast<unsigned long long>(first_pc));
    std::printf("expected: 1281 malloc (1 NULL), 256 free (plus 20001 empty launches' none)\n");
  }
  std::printf("empty launch: %.3f us\n", cost);
  return 0;
}
