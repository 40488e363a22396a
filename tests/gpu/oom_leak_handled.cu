// The seeds' "runs for a while and suddenly runs out of memory": a buffer leaked per iteration
// until the device is full; the program checks cudaMalloc and stops. One out_of_memory warning at
// the failing call, naming the leaking site as what filled the device, and the leak itself.
// EXPECT: out_of_memory api=cudaMalloc result=cudaErrorMemoryAllocation severity=warning verdict=own_allocations_filled_the_device at=@grow
// EXPECT: leak api=cudaMalloc bytes=* count=* at=@grow
// EXPECT-EXIT: 0
#include <cuda_runtime.h>
#include <cstdio>

constexpr size_t kChunk = size_t{8} << 30;  // 8 GiB per "request"

int main() {
  int served = 0;
  for (;;) {
    void* cache = nullptr;
    if (cudaMalloc(&cache, kChunk) != cudaSuccess) {  // @grow
      std::printf("out of memory after %d requests, as expected\n", served);
      break;
    }
    ++served;  // the buffer is never freed: kept "for later" and forgotten
  }
  return 0;
}
