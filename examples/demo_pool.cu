// cuaudit's pool demo: requests served from a pool annotated with NVTX (annotated_pool.h). One
// path forgets to give its scratch block back; without the annotations no tool could tell, since
// the pool's own cudaMalloc is released at the end. Run it: cuaudit ./demo_pool
#include <cstdio>

#include "annotated_pool.h"

__global__ void fill(float* data, int n, float value) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) data[i] = value;
}

static void serve(AnnotatedPool& pool, int request) {
  float* scratch = static_cast<float*>(pool.take());
  fill<<<4, 256>>>(scratch, 1024, static_cast<float>(request));
  cudaDeviceSynchronize();
  if (request % 10 == 9) return;  // Bug: this path never gives the block back.
  pool.give_back(scratch);
}

int main() {
  AnnotatedPool pool("requests", 4096, 64);
  for (int request = 0; request < 30; ++request) serve(pool, request);
  std::printf("served 30 requests\n");
  return 0;
}
