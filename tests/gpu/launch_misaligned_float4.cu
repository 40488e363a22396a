// The seeds' classic: a float4* made from d_ptr + 1. The kernel is given n = 0 and never touches
// the memory, so compute-sanitizer sees nothing; cuaudit reports it at the launch, from the
// parameter alone, once with the number of launches.
// EXPECT: misaligned_param api=cudaLaunchKernel count=3 param=0 type=float4* align=16 offset=4 at=@launch
// EXPECT-EXIT: 0
#include "cuda_check.h"

__global__ void write4(float4* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = make_float4(1, 2, 3, 4);
}

int main() {
  float* d_ptr = nullptr;
  CHECK(cudaMalloc(&d_ptr, 1024 * sizeof(float)));
  for (int i = 0; i < 3; ++i) {
    write4<<<1, 32>>>(reinterpret_cast<float4*>(d_ptr + 1), 0);  // @launch
  }
  write4<<<1, 32>>>(reinterpret_cast<float4*>(d_ptr + 4), 0);  // aligned: 16 bytes in
  CHECK(cudaGetLastError());
  CHECK(cudaDeviceSynchronize());
  CHECK(cudaFree(d_ptr));
  return 0;
}
