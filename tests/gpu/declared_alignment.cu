// Types whose alignment only the program declares: `struct __align__(16) Particle` and an
// `alignas(32)` struct, reached through pointers the kernels only read a float or a double through
// (their code makes 4- and 8-byte accesses, so it requires no more). The host code is built with
// -g: cuaudit reads the declared alignment from its debug information. Launched a few bytes off,
// without work: both reported, from the declared types; whole elements off: clean.
// EXPECT: misaligned_param api=cudaLaunchKernel count=1 param=0 align=16 offset=4 from=debug_info at=@particle
// EXPECT: misaligned_param api=cudaLaunchKernel count=1 param=0 align=32 offset=8 from=debug_info at=@wide
// EXPECT-EXIT: 0
#include "cuda_check.h"

struct __align__(16) Particle {
  float x, y, z, w;
};
struct alignas(32) Wide {
  double a, b;
};

__global__ void nudge(Particle* p, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) p[i].y += 1;
}

__global__ void widen(Wide* w, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) w[i].a += 1;
}

int main() {
  char* bytes = nullptr;
  CHECK(cudaMalloc(&bytes, 1 << 16));
  nudge<<<1, 32>>>(reinterpret_cast<Particle*>(bytes + 4), 0);  // @particle
  nudge<<<1, 32>>>(reinterpret_cast<Particle*>(bytes) + 3, 0);  // whole Particles in: clean
  widen<<<1, 32>>>(reinterpret_cast<Wide*>(bytes + 8), 0);      // @wide
  widen<<<1, 32>>>(reinterpret_cast<Wide*>(bytes) + 2, 0);      // whole Wides in: clean
  CHECK(cudaDeviceSynchronize());
  CHECK(cudaFree(bytes));
  return 0;
}
