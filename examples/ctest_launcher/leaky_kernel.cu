// A test that passes on its own but never frees a buffer: under cuaudit with --error-exitcode 1
// it fails, and its output names the line below.
#include <cstdio>

__global__ void fill(float* x, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] = 1.0f;
}

int main() {
  const int n = 1 << 16;
  float* d = nullptr;
  if (cudaMalloc(&d, n * sizeof(float)) != cudaSuccess) return 1;  // never freed
  fill<<<(n + 255) / 256, 256>>>(d, n);
  if (cudaDeviceSynchronize() != cudaSuccess) return 1;
  std::puts("leaky_kernel: ok");
  return 0;
}
