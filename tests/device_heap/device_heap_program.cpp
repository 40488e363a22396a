// A CUDA program's device-heap story without a GPU, for tests/device_heap/check_device_heap.py:
// loaded as `cuaudit --device-heap -- device_heap_program` with the stand-in Sanitizer API library
// (sanitizer_standin.cpp). It does what the CUDA driver does at cuInit (load the library named by
// CUDA_INJECTION64_PATH and call its InitializeInjection), then what the probe's kernels did on the
// H200 (tests/gpu/device_heap_probe/probe.cu): 4 launches that keep a 16-byte node per thread, one
// whose threads allocate and free, one whose malloc finds the heap exhausted, one that frees twice
// and frees an address malloc never returned, and a kernel of a module that never calls malloc.
#include <dlfcn.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include <cuda.h>

#include "device_heap_buffer.h"
#include "sanitizer_api.h"

namespace {

using cuaudit::device_heap::kFree;
using cuaudit::device_heap::kMalloc;
namespace san = cuaudit::inject::sanitizer;

struct Standin {
  CUmodule (*load_module)(bool);
  const void* (*launch)(CUmodule, const char*, uint32_t);
  uint64_t (*pc)(const char*, uint64_t);
  void (*device_call)(const void*, uint64_t, uint64_t, uint64_t, uint64_t);
  void (*memory)(int, uint64_t, uint64_t, uint32_t);
  void (*synchronize)();
  void (*create_context)();
} api;

template <typename F>
void resolve(void* library, F& f, const char* name) {
  f = reinterpret_cast<F>(dlsym(library, name));
  if (!f) {
    fprintf(stderr, "device_heap_program: the stand-in has no %s\n", name);
    exit(2);
  }
}

uint64_t g_heap = 0x7e0000000000ull;  // the device heap's next block
uint64_t heap_block(uint64_t bytes) {
  const uint64_t at = g_heap;
  g_heap += (bytes + 15) / 16 * 16;
  return at;
}

constexpr char kLeakNodes[] = "_Z10leak_nodesi";
constexpr char kAllocFree[] = "_Z10alloc_freev";
constexpr char kExhaust[] = "_Z7exhaustPPv";
constexpr char kFreeTwice[] = "_Z10free_twicePv";
constexpr char kEmpty[] = "_Z5emptyv";

void leak_nodes(CUmodule module) {  // each thread keeps a 16-byte node
  const void* patched = api.launch(module, kLeakNodes, 256);
  for (int t = 0; t < 256; ++t) api.device_call(patched, kMalloc, api.pc(kLeakNodes, 0x1f0), heap_block(16), 16);
}

void alloc_free(CUmodule module) {  // each thread's 32-byte scratch, freed
  const void* patched = api.launch(module, kAllocFree, 256);
  for (int t = 0; t < 256; ++t) {
    const uint64_t p = heap_block(32);
    api.device_call(patched, kMalloc, api.pc(kAllocFree, 0x80), p, 32);
    api.device_call(patched, kFree, api.pc(kAllocFree, 0xc0), p, 0);
  }
}

void exhaust(CUmodule module) {  // more than the heap: malloc returns NULL
  const void* patched = api.launch(module, kExhaust, 1);
  api.device_call(patched, kMalloc, api.pc(kExhaust, 0x60), 0, uint64_t(1) << 30);
}

void free_twice(CUmodule module, uint64_t global) {  // frees its block twice, and a global's address
  const void* patched = api.launch(module, kFreeTwice, 1);
  const uint64_t p = heap_block(64);
  api.device_call(patched, kMalloc, api.pc(kFreeTwice, 0x40), p, 64);
  api.device_call(patched, kFree, api.pc(kFreeTwice, 0x90), p, 0);
  api.device_call(patched, kFree, api.pc(kFreeTwice, 0x90), p, 0);
  api.device_call(patched, kFree, api.pc(kFreeTwice, 0xd0), global, 0);
}

}  // namespace

int main() {
  // What the CUDA driver does at cuInit.
  const char* injection = getenv("CUDA_INJECTION64_PATH");
  void* library = injection ? dlopen(injection, RTLD_NOW | RTLD_LOCAL) : nullptr;
  auto* initialize = library ? reinterpret_cast<int (*)()>(dlsym(library, "InitializeInjection")) : nullptr;
  if (!initialize) {
    fprintf(stderr, "device_heap_program: no injection to load (%s)\n", dlerror());
    return 2;
  }
  initialize();
  void* standin = dlopen(getenv("CUAUDIT_SANITIZER_LIBRARY"), RTLD_NOW | RTLD_LOCAL);  // the injection's, again
  if (!standin) return 2;
  resolve(standin, api.load_module, "standin_load_module");
  resolve(standin, api.launch, "standin_launch");
  resolve(standin, api.pc, "standin_pc");
  resolve(standin, api.device_call, "standin_device_call");
  resolve(standin, api.memory, "standin_memory");
  resolve(standin, api.synchronize, "standin_synchronize");
  resolve(standin, api.create_context, "standin_create_context");

  api.create_context();                                                // the first cudaMalloc's
  api.memory(san::kDeviceMemoryAlloc, 0x7d0000000000ull, 1 << 20, 0);  // cudaMalloc, never freed
  api.memory(san::kDeviceMemoryAlloc, 0x7d0000100000ull, 4096, 0);     // cudaMalloc, freed below
  const CUmodule lists = api.load_module(true);
  const CUmodule plain = api.load_module(false);
  for (int launch = 0; launch < 4; ++launch) leak_nodes(lists);
  alloc_free(lists);
  exhaust(lists);
  free_twice(lists, 0x7d0000200000ull);
  api.launch(plain, kEmpty, 1);  // a module without malloc: not patched, not recorded
  api.synchronize();
  api.memory(san::kDeviceMemoryFree, 0x7d0000100000ull, 4096, 0);
  return 0;
}
