// --device-heap on the H200: kernels that use the device heap, one launch site each. Per-thread
// nodes never freed (one leak site, 4 launches), scratch freed in the same kernel (nothing), a
// request larger than the heap (malloc returns NULL), and a block freed twice (run last: the heap
// may not survive it). The host's own cudaMalloc leak is tracked in this mode too.
// CUAUDIT-ARGS: --device-heap
// EXPECT: device_heap_leak bytes=16384 count=1024 at=@leak-launch
// EXPECT: device_heap_exhausted count=1 severity=warning at=@exhaust-launch
// EXPECT: device_heap_double_free count=1 at=@twice-launch
// EXPECT: leak api=cudaMalloc bytes=1048576 count=1 at=@host-leak
// EXPECT-NOTE: device-heap mode
// EXPECT-EXIT: 0
#include <cstdio>

#include "cuda_check.h"

__device__ void* kept[4 * 256];

__global__ void leak_nodes(int launch) {  // one 16-byte node per thread, never freed
  kept[launch * 256 + threadIdx.x] = malloc(16);
}

__global__ void scratch() {  // allocated and freed by each thread: correct
  char* p = static_cast<char*>(malloc(32));
  if (p) p[0] = 1;
  free(p);
}

__global__ void exhaust(void** out) {  // more than the default 8 MiB heap: malloc returns NULL
  *out = malloc(size_t(1) << 30);
}

__global__ void free_twice() {
  void* p = malloc(64);
  free(p);
  free(p);
}

int main() {
  void* host_side = nullptr;
  CHECK(cudaMalloc(&host_side, 1 << 20));                                     // @host-leak
  for (int launch = 0; launch < 4; ++launch) leak_nodes<<<1, 256>>>(launch);  // @leak-launch
  scratch<<<1, 256>>>();
  void** out = nullptr;
  CHECK(cudaMalloc(&out, sizeof(void*)));
  exhaust<<<1, 1>>>(out);  // @exhaust-launch
  CHECK(cudaDeviceSynchronize());
  CHECK(cudaFree(out));
  free_twice<<<1, 1>>>();  // @twice-launch
  const cudaError_t e = cudaDeviceSynchronize();
  printf("after the double free: %s\n", cudaGetErrorString(e));
  return 0;
}
