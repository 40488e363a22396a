// The same two failures, handled: the cudaMalloc result is checked, the launch error retrieved
// with cudaGetLastError. The request larger than the device is an out_of_memory warning (handled);
// the launch an api_error info entry. Built at -O0 and -O2.
// EXPECT: out_of_memory api=cudaMalloc result=cudaErrorMemoryAllocation severity=warning verdict=larger_than_the_device at=@oom
// EXPECT: api_error api=cudaLaunchKernel result=cudaErrorInvalidValue at=@launch
// EXPECT-EXIT: 0
#include <cuda_runtime.h>
#include <cstdio>

__global__ void scale(float* x, float s) { x[threadIdx.x] *= s; }

int main() {
  float* huge = nullptr;
  if (cudaMalloc(&huge, size_t{1} << 50) != cudaSuccess) {  // @oom
    std::printf("out of memory, as expected\n");
  }
  float* x = nullptr;
  if (cudaMalloc(&x, 256 * sizeof(float)) != cudaSuccess) return 1;
  scale<<<1, 4096>>>(x, 2.0f);  // @launch
  if (cudaError_t e = cudaGetLastError(); e != cudaSuccess) std::printf("launch failed: %s\n", cudaGetErrorString(e));
  cudaDeviceSynchronize();
  return cudaFree(x) == cudaSuccess ? 0 : 1;
}
