// The second cudaFree of the same buffer, with the first release and the allocation shown.
// Addresses reused by later allocations must not be mistaken for double frees.
// EXPECT: double_free api=cudaFree alloc_api=cudaMalloc result=cudaErrorInvalidValue at=@second first_at=@first alloc_at=@alloc
// EXPECT-EXIT: 0
#include <cuda_runtime.h>

static void release(void* p) {
  cudaFree(p);  // @first
}

int main() {
  for (int i = 0; i < 100; ++i) {  // correct: the same addresses come back again and again
    void* p = nullptr;
    if (cudaMalloc(&p, 4096) != cudaSuccess || cudaFree(p) != cudaSuccess) return 1;
  }
  void* buffer = nullptr;
  if (cudaMalloc(&buffer, 4096) != cudaSuccess) return 1;  // @alloc
  release(buffer);
  cudaFree(buffer);  // @second
  return 0;
}
