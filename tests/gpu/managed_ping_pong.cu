// The seeds' unified-memory trap: a managed buffer touched by a kernel and then by the host in every
// step, so its pages migrate to the device and back each time. One managed_migration warning at
// the cudaMallocManaged line, with the bytes moved each way, the page faults and the kernel (scale).
// EXPECT: managed_migration api=cudaMallocManaged bytes=16777216 count=* severity=warning at=@managed note=pulled_it_to_the_device:_`scale(float*,_unsigned_long,_float)`
// EXPECT-EXIT: 0
#include "cuda_check.h"

__global__ void scale(float* data, size_t n, float by) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x)
    data[i] *= by;
}

int main() {
  constexpr size_t n = (16 << 20) / sizeof(float);
  float* data = nullptr;
  CHECK(cudaMallocManaged(&data, n * sizeof(float)));  // @managed
  for (size_t i = 0; i < n; ++i) data[i] = 1.0f;
  double sum = 0;
  for (int step = 0; step < 8; ++step) {
    scale<<<256, 256>>>(data, n, 1.0001f);  // the pages fault over to the device
    CHECK(cudaDeviceSynchronize());
    for (size_t i = 0; i < n; i += 1024) sum += data[i];  // and back to the host
  }
  std::printf("sum %.1f\n", sum);
  CHECK(cudaFree(data));
  return 0;
}
