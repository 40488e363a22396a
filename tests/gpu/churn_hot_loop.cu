// The seeds' experiment: a hot loop that allocates, uses and frees a small buffer 100,000 times.
// One allocation_churn finding (info) at the allocation, with its pairs and the time in the calls.
// EXPECT: allocation_churn api=cudaMalloc bytes=4096 count=100000 severity=info at=@alloc
// EXPECT-EXIT: 0
#include "cuda_check.h"

__global__ void touch(float* p) { p[threadIdx.x] += 1.0f; }

int main() {
  for (int i = 0; i < 100000; ++i) {
    float* scratch = nullptr;
    CHECK(cudaMalloc(&scratch, 4096));  // @alloc
    touch<<<1, 32>>>(scratch);
    CHECK(cudaFree(scratch));
  }
  CHECK(cudaDeviceSynchronize());
  return 0;
}
