// Two devices in one process, switched with cudaSetDevice on one thread: device 0's buffer is
// freed, device 1's is leaked. The leak is named on device 1, and both devices are named.
// REQUIRES-DEVICES: 2
// EXPECT: leak api=cudaMalloc bytes=268435456 count=1 device=1 at=@leak1
// EXPECT-DEVICES: 2
// EXPECT-EXIT: 0
#include "cuda_check.h"

__global__ void fill(float* p, float v) { p[blockIdx.x * blockDim.x + threadIdx.x] = v; }

int main() {
  float* on0 = nullptr;
  float* on1 = nullptr;
  CHECK(cudaSetDevice(0));
  CHECK(cudaMalloc(&on0, 256 << 20));
  fill<<<256, 256>>>(on0, 1.0f);
  CHECK(cudaSetDevice(1));
  CHECK(cudaMalloc(&on1, 256 << 20));  // @leak1
  fill<<<256, 256>>>(on1, 2.0f);
  CHECK(cudaDeviceSynchronize());
  CHECK(cudaSetDevice(0));
  CHECK(cudaDeviceSynchronize());
  CHECK(cudaFree(on0));
  return 0;  // on1 is never freed
}
