// Failures the program never looks at: an out-of-memory cudaMalloc whose result is ignored (and
// whose pointer is then given to a copy that fails too), and a launch with 4096 threads per block
// (CUDA 13 answers cudaErrorInvalidValue) never followed by cudaGetLastError. Built at -O0 and -O2.
// The failed allocation is an out_of_memory error (unchecked), asking for more than the device has.
// EXPECT: out_of_memory api=cudaMalloc result=cudaErrorMemoryAllocation severity=error verdict=larger_than_the_device at=@oom note=cudaMemcpy
// EXPECT: unchecked_error api=cudaMemcpy result=* at=@copy
// EXPECT: unchecked_error api=cudaLaunchKernel result=cudaErrorInvalidValue at=@launch
// EXPECT-EXIT: 0
#include <cuda_runtime.h>

__global__ void scale(float* x, float s) { x[threadIdx.x] *= s; }

int main() {
  float* huge = nullptr;
  cudaMalloc(&huge, size_t{1} << 50);  // @oom
  float host[16] = {};
  cudaMemcpy(huge, host, sizeof host, cudaMemcpyHostToDevice);  // @copy
  float* x = nullptr;
  if (cudaMalloc(&x, 256 * sizeof(float)) != cudaSuccess) return 1;
  scale<<<1, 4096>>>(x, 2.0f);  // @launch
  cudaDeviceSynchronize();
  return cudaFree(x) == cudaSuccess ? 0 : 1;
}
