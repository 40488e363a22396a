// Memory never freed but reclaimed by cudaDeviceReset is still the program's leak, and the
// address reused after the reset is tracked as a new allocation.
// EXPECT: leak api=cudaMalloc bytes=4096 count=1 at=@before-reset
// EXPECT-EXIT: 0
#include <cuda_runtime.h>

int main() {
  void* p = nullptr;
  if (cudaMalloc(&p, 4096) != cudaSuccess) return 1;  // @before-reset
  if (cudaDeviceReset() != cudaSuccess) return 1;
  void* q = nullptr;
  if (cudaMalloc(&q, 4096) != cudaSuccess) return 1;
  return cudaFree(q) == cudaSuccess ? 0 : 1;
}
