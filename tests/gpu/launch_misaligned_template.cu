// A template kernel instantiated for int4: the type comes from the instantiation's mangled name
// (fill<int4>(int4*, int)). The int instantiation at the same address is fine, and so are
// aligned const pointees.
// EXPECT: misaligned_param api=cudaLaunchKernel count=1 param=0 type=int4* align=16 offset=8 at=@launch
// EXPECT-EXIT: 0
#include "cuda_check.h"

template <typename T>
__global__ void fill(T* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = T{};
}

template <typename T>
__global__ void copy(T* out, const T* in, int n) {  // copy<int4>(int4*, int4 const*, int)
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = in[i];
}

int main() {
  int* d = nullptr;
  CHECK(cudaMalloc(&d, 4096));
  fill<int4><<<1, 32>>>(reinterpret_cast<int4*>(d + 2), 0);  // @launch
  fill<int><<<1, 32>>>(d + 2, 0);
  copy<int4><<<1, 32>>>(reinterpret_cast<int4*>(d + 4), reinterpret_cast<const int4*>(d + 8), 0);
  CHECK(cudaGetLastError());
  CHECK(cudaDeviceSynchronize());
  CHECK(cudaFree(d));
  return 0;
}
