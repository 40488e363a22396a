// The same leak, the failure ignored: the program keeps going with pointers that are not memory.
// The out_of_memory finding is an error, grouped over every failed call at the site.
// EXPECT: out_of_memory api=cudaMalloc result=cudaErrorMemoryAllocation severity=error verdict=own_allocations_filled_the_device count=* at=@grow
// EXPECT: leak api=cudaMalloc bytes=* count=* at=@grow
// EXPECT-EXIT: 0
#include <cuda_runtime.h>

constexpr size_t kChunk = size_t{8} << 30;  // 8 GiB per "request": 40 of them are more than any GPU

int main() {
  for (int request = 0; request < 40; ++request) {
    void* cache = nullptr;
    cudaMalloc(&cache, kChunk);  // @grow
  }
  return 0;
}
