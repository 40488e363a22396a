// The seeds' advice applied: the same hot loop with stream-ordered allocation. Still 100,000
// pairs at one site (reported, info), but the time inside the calls is a fraction of cudaMalloc's:
// compare the two headlines in the GPU log.
// EXPECT: allocation_churn api=cudaMallocAsync bytes=4096 count=100000 severity=info at=@alloc
// EXPECT-EXIT: 0
#include "cuda_check.h"

__global__ void touch(float* p) { p[threadIdx.x] += 1.0f; }

int main() {
  cudaStream_t stream;
  CHECK(cudaStreamCreate(&stream));
  for (int i = 0; i < 100000; ++i) {
    float* scratch = nullptr;
    CHECK(cudaMallocAsync(&scratch, 4096, stream));  // @alloc
    touch<<<1, 32, 0, stream>>>(scratch);
    CHECK(cudaFreeAsync(scratch, stream));
  }
  CHECK(cudaStreamSynchronize(stream));
  CHECK(cudaStreamDestroy(stream));
  return 0;
}
