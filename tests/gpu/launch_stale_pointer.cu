// A pointer launched after its memory was freed (use after free), twice from one line; memory
// freed and then allocated again at the same address is fine.
// EXPECT: stale_pointer_param api=cudaLaunchKernel count=2 param=0 type=float* at=@launch
// EXPECT-EXIT: 0
#include "cuda_check.h"

__global__ void scale(float* data, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) data[i] *= 2;
}

int main() {
  float* stale = nullptr;
  CHECK(cudaMalloc(&stale, 1 << 20));                            // @alloc
  CHECK(cudaFree(stale));                                        // @free
  for (int i = 0; i < 2; ++i) scale<<<1, 32>>>(stale + 256, 0);  // @launch
  CHECK(cudaDeviceSynchronize());
  float* again = nullptr;
  CHECK(cudaMalloc(&again, 1 << 20));
  scale<<<1, 32>>>(again, 0);
  CHECK(cudaDeviceSynchronize());
  CHECK(cudaFree(again));
  return 0;
}
