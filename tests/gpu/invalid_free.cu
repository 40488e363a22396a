// Pointers no allocator returned: an interior pointer and a stack address. cudaFree(nullptr) is
// legal and silent.
// EXPECT: invalid_free api=cudaFree alloc_api=cudaMalloc at=@interior alloc_at=@alloc
// EXPECT: invalid_free api=cudaFree at=@stack
// EXPECT-EXIT: 0
#include <cuda_runtime.h>

int main() {
  char* buffer = nullptr;
  if (cudaMalloc(&buffer, 4096) != cudaSuccess) return 1;  // @alloc
  cudaFree(buffer + 16);                                   // @interior
  int local = 0;
  cudaFree(&local);  // @stack
  cudaFree(nullptr);
  return cudaFree(buffer) == cudaSuccess ? 0 : 1;
}
