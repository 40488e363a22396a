// The annotated pool used correctly: every block given back once, kernels launched only with
// blocks the program holds. No findings.
// EXPECT-EXIT: 0
#include "annotated_pool.h"
#include "cuda_check.h"

__global__ void scale(float* data, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) data[i] *= 2;
}

int main() {
  AnnotatedPool pool("requests", 4096, 16);
  for (int request = 0; request < 100; ++request) {
    float* a = static_cast<float*>(pool.take());
    float* b = static_cast<float*>(pool.take());
    scale<<<4, 256>>>(a, 1024);
    scale<<<4, 256>>>(b, 1024);
    CHECK(cudaDeviceSynchronize());
    pool.give_back(b);
    pool.give_back(a);
  }
  return 0;
}
