// A correct program: RAII owners and checked errors for every family. No finding, and the
// program's own exit status (3) comes back through cuaudit.
// EXPECT-EXIT: 3
#include <cuda_runtime.h>
#include <cstdio>
#include <cstdlib>

#include <memory>
#include <vector>
#include "cuda_check.h"

struct DeviceDeleter {
  void operator()(void* p) const { CHECK(cudaFree(p)); }
};
struct HostDeleter {
  void operator()(void* p) const { CHECK(cudaFreeHost(p)); }
};
using DeviceBuffer = std::unique_ptr<void, DeviceDeleter>;
using PinnedBuffer = std::unique_ptr<void, HostDeleter>;

DeviceBuffer device_buffer(size_t bytes) {
  void* p = nullptr;
  CHECK(cudaMalloc(&p, bytes));
  return DeviceBuffer(p);
}

PinnedBuffer pinned_buffer(size_t bytes) {
  void* p = nullptr;
  CHECK(cudaMallocHost(&p, bytes));
  return PinnedBuffer(p);
}

__global__ void scale(float* x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] *= 2.0f;
}

int main() {
  const int n = 1 << 16;
  {
    std::vector<DeviceBuffer> buffers;
    for (int i = 0; i < 50; ++i) buffers.push_back(device_buffer(n * sizeof(float)));
    PinnedBuffer staging = pinned_buffer(n * sizeof(float));
    CHECK(cudaMemcpy(buffers[0].get(), staging.get(), n * sizeof(float), cudaMemcpyHostToDevice));
    scale<<<n / 256, 256>>>(static_cast<float*>(buffers[0].get()), n);
    CHECK(cudaGetLastError());
    CHECK(cudaDeviceSynchronize());
  }
  void* m = nullptr;
  CHECK(cudaMallocManaged(&m, 4096));
  CHECK(cudaFree(m));
  void* h = nullptr;
  CHECK(cudaHostAlloc(&h, 4096, cudaHostAllocMapped));
  CHECK(cudaFreeHost(h));
  std::vector<char> user(65536);
  CHECK(cudaHostRegister(user.data(), user.size(), cudaHostRegisterDefault));
  CHECK(cudaHostUnregister(user.data()));
  cudaStream_t s;
  CHECK(cudaStreamCreate(&s));
  void* a = nullptr;
  CHECK(cudaMallocAsync(&a, 8192, s));
  CHECK(cudaFreeAsync(a, s));
  CHECK(cudaStreamSynchronize(s));
  CHECK(cudaStreamDestroy(s));
  cudaChannelFormatDesc desc = cudaCreateChannelDesc<float>();
  cudaArray_t array;
  CHECK(cudaMallocArray(&array, &desc, 16, 16));
  CHECK(cudaFreeArray(array));
  return 3;
}
