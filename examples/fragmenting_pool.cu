// The seeds' production story in two seconds: a pool that is "half free" and still cannot serve a
// request, because its free memory is cut into holes. A batch keeps each step's 1 MiB result and
// gives its 1 MiB of scratch back: 32 holes of 1 MiB between the results. Then every request for
// 4 MiB of contiguous scratch finds 32 MiB free and no block larger than 1 MiB, and falls back to
// cudaMalloc. Run it: cuaudit --html pool.html ./fragmenting_pool (docs/FRAGMENTATION.md)
//
// It is also a GPU test (tests/gpu/CMakeLists.txt): what cuaudit must say of it.
// EXPECT: fragmentation api=nvtxMemHeapRegister severity=warning bytes=* count=1 via=@pool
// EXPECT-EXIT: 0
#include <chrono>
#include <cstdio>
#include <thread>
#include <vector>

#include "first_fit_pool.h"

__global__ void fill(float* data, size_t n, float value) {
  for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) data[i] = value;
}

int main() {
  constexpr size_t MiB = 1 << 20;
  FirstFitPool pool("activations", 64 * MiB);  // @pool
  std::vector<void*> results, scratch;
  for (int step = 0; step < 32; ++step) {
    scratch.push_back(pool.alloc(1 * MiB));
    results.push_back(pool.alloc(1 * MiB));  // @keep: long-lived, between the scratch blocks
    fill<<<64, 256>>>(static_cast<float*>(results.back()), MiB / sizeof(float), float(step));
  }
  for (void* p : scratch) pool.dealloc(p);  // 32 holes of 1 MiB
  std::printf("pool: %zu MiB free, largest free block %zu MiB\n", pool.free_bytes() / MiB, pool.largest_free() / MiB);

  int fell_back = 0;
  for (int request = 0; request < 40; ++request) {
    void* big = pool.alloc(4 * MiB);
    const bool from_pool = big != nullptr;
    if (!from_pool && cudaMalloc(&big, 4 * MiB) != cudaSuccess) return 1;  // the pool could not: fall back
    fell_back += !from_pool;
    fill<<<256, 256>>>(static_cast<float*>(big), 4 * MiB / sizeof(float), float(request));
    if (cudaDeviceSynchronize() != cudaSuccess) return 1;
    std::this_thread::sleep_for(std::chrono::milliseconds(25));  // the request's work
    if (from_pool) {
      pool.dealloc(big);
    } else {
      cudaFree(big);
    }
  }
  std::printf("%d of 40 requests for 4 MiB did not fit in the pool and fell back to cudaMalloc\n", fell_back);
  for (void* p : results) pool.dealloc(p);
  return 0;
}
