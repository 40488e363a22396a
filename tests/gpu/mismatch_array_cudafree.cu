// A CUDA array handed to cudaFree instead of cudaFreeArray.
// EXPECT: mismatched_free api=cudaFree alloc_api=cudaMallocArray at=@wrong alloc_at=@alloc
// EXPECT-EXIT: 0
#include <cuda_runtime.h>

int main() {
  cudaChannelFormatDesc desc = cudaCreateChannelDesc<float>();
  cudaArray_t array = nullptr;
  if (cudaMallocArray(&array, &desc, 64, 64) != cudaSuccess) return 1;  // @alloc
  cudaFree(array);                                                      // @wrong
  return cudaFreeArray(array) == cudaSuccess ? 0 : 1;
}
