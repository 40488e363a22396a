// A global owner frees its buffer in a static destructor, after CUDA began shutting down: the
// cudaFree fails with cudaErrorCudartUnloading. That is CUDA's teardown order, not a program leak.
// EXPECT-EXIT: 0
// EXPECT-NOTE: cudaErrorCudartUnloading
#include <cuda_runtime.h>

struct GlobalBuffer {
  void* p = nullptr;
  ~GlobalBuffer() {
    if (p) cudaFree(p);
  }
};
GlobalBuffer g_buffer;

int main() { return cudaMalloc(&g_buffer.p, 1 << 20) == cudaSuccess ? 0 : 1; }
