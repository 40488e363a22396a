// A misaligned double2* among several parameters (pointers, an int, a by-value struct, a const
// pointer): only that parameter is reported, with its index and type. A double* at an odd
// multiple of 4 is misaligned too.
// EXPECT: misaligned_param api=cudaLaunchKernel count=1 param=2 type=double2* align=16 offset=8 at=@launch
// EXPECT: misaligned_param api=cudaLaunchKernel count=1 param=0 type=double* align=8 offset=4 at=@scalar
// EXPECT-EXIT: 0
#include "cuda_check.h"

struct Window {  // passed by value: never a pointer, whatever its bytes
  long long begin;
};

__global__ void axpy2(const float* __restrict__ x, float* y, double2* pairs, int n, Window w, const int* flags) {
  int i = blockIdx.x * blockDim.x + threadIdx.x + static_cast<int>(w.begin);
  if (i < n) pairs[i] = make_double2(x[i], y[i] + flags[i]);
}

__global__ void scale(double* data, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) data[i] *= 2;
}

int main() {
  float *x = nullptr, *y = nullptr;
  double* d = nullptr;
  int* flags = nullptr;
  CHECK(cudaMalloc(&x, 4096));
  CHECK(cudaMalloc(&y, 4096));
  CHECK(cudaMalloc(&d, 4096));
  CHECK(cudaMalloc(&flags, 4096));
  Window w{1};  // an odd value where a pointer would be: by value, not checked
  axpy2<<<1, 32>>>(x + 1, y + 3, reinterpret_cast<double2*>(d + 1), 0, w, flags + 1);  // @launch
  scale<<<1, 32>>>(reinterpret_cast<double*>(reinterpret_cast<char*>(d) + 4), 0);      // @scalar
  scale<<<1, 32>>>(d + 1, 0);                                                          // aligned for double
  CHECK(cudaGetLastError());
  CHECK(cudaDeviceSynchronize());
  CHECK(cudaFree(x));
  CHECK(cudaFree(y));
  CHECK(cudaFree(d));
  CHECK(cudaFree(flags));
  return 0;
}
