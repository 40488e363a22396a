// A test that allocates, uses and frees its device memory: passes under cuaudit.
#include <cstdio>

__global__ void scale(float* x, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] *= 2.0f;
}

int main() {
  const int n = 1 << 16;
  float* d = nullptr;
  if (cudaMalloc(&d, n * sizeof(float)) != cudaSuccess) return 1;
  scale<<<(n + 255) / 256, 256>>>(d, n);
  if (cudaDeviceSynchronize() != cudaSuccess) return 1;
  cudaFree(d);
  std::puts("clean_kernel: ok");
  return 0;
}
