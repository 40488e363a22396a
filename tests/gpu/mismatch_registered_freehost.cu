// Registered host memory handed to cudaFreeHost instead of being unregistered.
// EXPECT: mismatched_free api=cudaFreeHost alloc_api=cudaHostRegister at=@wrong alloc_at=@register
// EXPECT-EXIT: 0
#include <cuda_runtime.h>
#include <cstdlib>

int main() {
  void* user = std::aligned_alloc(4096, 1 << 16);
  if (cudaHostRegister(user, 1 << 16, cudaHostRegisterDefault) != cudaSuccess) return 1;  // @register
  cudaFreeHost(user);                                                                     // @wrong
  if (cudaHostUnregister(user) != cudaSuccess) return 1;
  std::free(user);
  return 0;
}
