// 32 threads make 100,000 allocate/free pairs each (stream-ordered, so that the driver keeps up)
// while 2 more threads launch kernels: no event may be lost and no finding invented. (The
// launchers' counter buffer is the one more allocation and release.) The 3,200,000 pairs from
// one line are, rightly, allocation churn (info).
// EXPECT: allocation_churn api=cudaMallocAsync bytes=* count=3200000 severity=info at=@churn
// EXPECT-ALLOCATIONS: 3200001
// EXPECT-RELEASES: 3200001
// EXPECT-EXIT: 0
#include <cuda_runtime.h>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

__global__ void spin(int* x) { atomicAdd(x, 1); }

int main(int argc, char** argv) {
  const int threads = 32;
  const int pairs = argc > 1 ? std::atoi(argv[1]) : 100000;
  std::atomic<bool> done{false};
  std::atomic<int> failures{0};
  int* counter = nullptr;
  if (cudaMalloc(&counter, sizeof(int)) != cudaSuccess) return 1;
  std::vector<std::thread> launchers;
  for (int l = 0; l < 2; ++l) {
    launchers.emplace_back([&] {
      cudaStream_t s;
      cudaStreamCreate(&s);
      while (!done) {
        spin<<<1, 32, 0, s>>>(counter);
        if (cudaGetLastError() != cudaSuccess) ++failures;
      }
      cudaStreamSynchronize(s);
      cudaStreamDestroy(s);
    });
  }
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&, t] {
      cudaStream_t s;
      cudaStreamCreate(&s);
      for (int i = 0; i < pairs; ++i) {
        void* p = nullptr;
        if (cudaMallocAsync(&p, 256 + 64 * (t % 8), s) != cudaSuccess) ++failures;  // @churn
        if (cudaFreeAsync(p, s) != cudaSuccess) ++failures;
      }
      cudaStreamSynchronize(s);
      cudaStreamDestroy(s);
    });
  }
  for (auto& w : workers) w.join();
  done = true;
  for (auto& l : launchers) l.join();
  cudaFree(counter);
  std::printf("stress: %d threads x %d pairs, %d failures\n", threads, pairs, failures.load());
  return failures == 0 ? 0 : 1;
}
