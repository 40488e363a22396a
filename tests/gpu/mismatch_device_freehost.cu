// Device memory handed to cudaFreeHost, then released correctly.
// EXPECT: mismatched_free api=cudaFreeHost alloc_api=cudaMalloc at=@wrong alloc_at=@alloc
// EXPECT-EXIT: 0
#include <cuda_runtime.h>

int main() {
  void* d = nullptr;
  if (cudaMalloc(&d, 1 << 16) != cudaSuccess) return 1;  // @alloc
  cudaFreeHost(d);                                       // @wrong
  return cudaFree(d) == cudaSuccess ? 0 : 1;
}
