// A malloc'ed host buffer passed to a kernel (the device cannot read pageable memory); pinned,
// managed and registered host memory are fine.
// EXPECT: host_pointer_param api=cudaLaunchKernel count=1 param=0 type=float* at=@launch
// EXPECT-EXIT: 0
#include <cstdlib>

#include "cuda_check.h"

__global__ void scale(float* data, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) data[i] *= 2;
}

int main() {
  float* host = static_cast<float*>(std::malloc(1 << 20));
  scale<<<1, 32>>>(host, 0);  // @launch
  float *pinned = nullptr, *managed = nullptr;
  CHECK(cudaMallocHost(&pinned, 4096));
  CHECK(cudaMallocManaged(&managed, 4096));
  float* registered = static_cast<float*>(std::aligned_alloc(4096, 8192));
  CHECK(cudaHostRegister(registered, 8192, cudaHostRegisterDefault));
  scale<<<1, 32>>>(pinned, 0);
  scale<<<1, 32>>>(managed, 0);
  scale<<<1, 32>>>(registered, 0);
  CHECK(cudaDeviceSynchronize());
  CHECK(cudaHostUnregister(registered));
  std::free(registered);
  CHECK(cudaFreeHost(pinned));
  CHECK(cudaFree(managed));
  std::free(host);
  return 0;
}
