// A stream-ordered free after the allocation was already released.
// EXPECT: double_free api=cudaFreeAsync alloc_api=cudaMallocAsync at=@second first_at=@first alloc_at=@alloc
// EXPECT-EXIT: 0
#include <cuda_runtime.h>

int main() {
  cudaStream_t stream;
  if (cudaStreamCreate(&stream) != cudaSuccess) return 1;
  void* p = nullptr;
  if (cudaMallocAsync(&p, 1 << 20, stream) != cudaSuccess) return 1;  // @alloc
  if (cudaFree(p) != cudaSuccess) return 1;                           // @first
  cudaFreeAsync(p, stream);                                           // @second
  cudaStreamSynchronize(stream);
  return 0;
}
