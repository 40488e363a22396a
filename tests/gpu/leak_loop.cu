// A temporary buffer allocated in every step and never freed: one grouped leak.
// EXPECT: leak api=cudaMalloc bytes=409600 count=100 at=@temp-alloc
// EXPECT-EXIT: 0
#include <cuda_runtime.h>
#include <cstdio>

__global__ void fill(float* data, int n, float value) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) data[i] = value;
}

static void step(int i) {
  float* scratch = nullptr;
  if (cudaMalloc(&scratch, 1024 * sizeof(float)) != cudaSuccess) {  // @temp-alloc
    std::fprintf(stderr, "cudaMalloc failed\n");
    return;
  }
  fill<<<4, 256>>>(scratch, 1024, static_cast<float>(i));
  // Bug: scratch is never freed.
}

int main() {
  for (int i = 0; i < 100; ++i) step(i);
  return cudaDeviceSynchronize() == cudaSuccess ? 0 : 1;
}
