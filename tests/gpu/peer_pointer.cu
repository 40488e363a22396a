// A kernel on device 0 given a pointer into device 1's memory: without peer access that is a
// peer_pointer_param finding (the kernel is told n = 0, so it never dereferences it); after
// cudaDeviceEnablePeerAccess the same pointer is fine, and so are managed memory and
// cudaMemcpyPeer. Skipped where the two devices cannot reach each other.
// REQUIRES-DEVICES: 2
// EXPECT: peer_pointer_param api=cudaLaunchKernel count=1 device=0 at=@no_peer
// EXPECT-EXIT: 0
#include "cuda_check.h"

__global__ void add(float* remote, float* local, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) local[i] += remote[i];
}

int main() {
  int can = 0;
  CHECK(cudaDeviceCanAccessPeer(&can, 0, 1));
  float *remote = nullptr, *local = nullptr, *managed = nullptr;
  CHECK(cudaSetDevice(1));
  CHECK(cudaMalloc(&remote, 1 << 20));
  CHECK(cudaMemset(remote, 0, 1 << 20));
  CHECK(cudaSetDevice(0));
  CHECK(cudaMalloc(&local, 1 << 20));
  CHECK(cudaMallocManaged(&managed, 1 << 20));
  add<<<1, 256>>>(remote, local, 0);  // @no_peer
  CHECK(cudaDeviceSynchronize());
  add<<<1, 256>>>(managed, local, 256);                 // managed memory: fine
  CHECK(cudaMemcpyPeer(local, 0, remote, 1, 1 << 20));  // a copy, not misuse
  if (can) {
    CHECK(cudaDeviceEnablePeerAccess(1, 0));
    add<<<1, 256>>>(remote, local, 256);  // peer access enabled: fine
  } else {
    std::printf("devices 0 and 1 cannot access each other: the enabled case is not run\n");
  }
  CHECK(cudaDeviceSynchronize());
  CHECK(cudaFree(managed));
  CHECK(cudaFree(local));
  CHECK(cudaSetDevice(1));
  CHECK(cudaFree(remote));
  return 0;
}
