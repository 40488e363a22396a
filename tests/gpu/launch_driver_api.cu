// Driver API launches: cuLaunchKernel with a misaligned float4*, cuLaunchKernelEx with a stale
// pointer, and an extern "C" kernel (no parameter types: its misaligned float4* cannot be known
// as such, its freed pointer is still reported, its small integers are nothing).
// EXPECT: misaligned_param api=cuLaunchKernel count=1 param=0 type=float4* at=@driver
// EXPECT: stale_pointer_param api=cuLaunchKernelEx count=1 param=0 at=@driver_ex
// EXPECT: stale_pointer_param api=cudaLaunchKernel count=1 param=1 at=@untyped
// EXPECT-EXIT: 0
#include <cuda.h>

#include "cuda_check.h"

__global__ void write4(float4* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = make_float4(1, 2, 3, 4);
}

extern "C" __global__ void plain(long long count, float* data, float4* vec) {
  if (count < 0) data[0] = vec[0].x;
}

#define CU_CHECK(call) CHECK((call) == CUDA_SUCCESS ? cudaSuccess : cudaErrorUnknown)

int main() {
  float* d = nullptr;
  CHECK(cudaMalloc(&d, 4096));
  cudaFunction_t f;
  CHECK(cudaGetFuncBySymbol(&f, reinterpret_cast<const void*>(write4)));
  float4* misaligned = reinterpret_cast<float4*>(d + 1);
  int n = 0;
  void* args[] = {&misaligned, &n};
  CU_CHECK(cuLaunchKernel(reinterpret_cast<CUfunction>(f), 1, 1, 1, 32, 1, 1, 0, nullptr, args, nullptr));  // @driver

  float* gone = nullptr;
  CHECK(cudaMalloc(&gone, 4096));
  CHECK(cudaFree(gone));
  float4* stale = reinterpret_cast<float4*>(gone);
  args[0] = &stale;
  CUlaunchConfig config{};
  config.gridDimX = config.gridDimY = config.gridDimZ = 1;
  config.blockDimX = 32, config.blockDimY = config.blockDimZ = 1;
  CU_CHECK(cuLaunchKernelEx(&config, reinterpret_cast<CUfunction>(f), args, nullptr));  // @driver_ex

  plain<<<1, 32>>>(0, gone, reinterpret_cast<float4*>(d + 1));  // @untyped
  plain<<<1, 32>>>(4096, d, reinterpret_cast<float4*>(d));
  CHECK(cudaDeviceSynchronize());
  CHECK(cudaFree(d));
  return 0;
}
