// Pinned host memory handed to cudaFree, never released properly: the mismatch, and a leak that
// says which release failed to release it.
// EXPECT: mismatched_free api=cudaFree alloc_api=cudaMallocHost result=cudaErrorInvalidValue at=@free alloc_at=@alloc
// EXPECT: leak api=cudaMallocHost bytes=4096 count=1 at=@alloc
// EXPECT-EXIT: 0
#include <cuda_runtime.h>

int main() {
  float* staging = nullptr;
  if (cudaMallocHost(&staging, 4096) != cudaSuccess) return 1;  // @alloc
  cudaFree(staging);                                            // @free
  return 0;
}
