// The same work done right: the buffer is prefetched to the device once, the kernels run there, and
// the host reads the result once at the end. No managed_migration finding (the pages never come
// back to the device after going to the host).
// EXPECT-EXIT: 0
#include "cuda_check.h"

__global__ void scale(float* data, size_t n, float by) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x)
    data[i] *= by;
}

int main() {
  constexpr size_t n = (16 << 20) / sizeof(float);
  float* data = nullptr;
  CHECK(cudaMallocManaged(&data, n * sizeof(float)));
  for (size_t i = 0; i < n; ++i) data[i] = 1.0f;
  int device = 0;
  CHECK(cudaGetDevice(&device));
  cudaMemLocation location{};
  location.type = cudaMemLocationTypeDevice;
  location.id = device;
  CHECK(cudaMemPrefetchAsync(data, n * sizeof(float), location, 0, 0));
  for (int step = 0; step < 8; ++step) scale<<<256, 256>>>(data, n, 1.0001f);
  CHECK(cudaDeviceSynchronize());
  double sum = 0;
  for (size_t i = 0; i < n; i += 1024) sum += data[i];  // read once, at the end
  std::printf("sum %.1f\n", sum);
  CHECK(cudaFree(data));
  return 0;
}
