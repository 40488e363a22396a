// The price of checking free() against CUDA host memory: N malloc/free pairs of mixed sizes
// (default 10 million) while pinned and managed allocations are live, so that every free() is
// looked up. bench/run_bench.sh runs it natively and under cuaudit and prints the ratio.
#include <cuda_runtime.h>
#include <chrono>
#include <cstdio>
#include <cstdlib>

#include "max_rss.h"

int main(int argc, char** argv) {
  const long pairs = argc > 1 ? std::atol(argv[1]) : 10000000;
  void* pinned[64];
  for (auto& p : pinned) {
    if (cudaMallocHost(&p, 4096) != cudaSuccess) return 1;
  }
  void* managed = nullptr;
  if (cudaMallocManaged(&managed, 1 << 20) != cudaSuccess) return 1;

  void* live[256] = {};
  unsigned seed = 12345;
  const auto start = std::chrono::steady_clock::now();
  for (long i = 0; i < pairs; ++i) {
    seed = seed * 1103515245u + 12345u;
    const unsigned slot = (seed >> 8) % 256;
    std::free(live[slot]);
    live[slot] = std::malloc(16 + (seed >> 16) % 1024);
  }
  const double ns = std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - start).count();
  for (void* p : live) std::free(p);
  for (void* p : pinned) cudaFreeHost(p);
  cudaFree(managed);
  std::printf("heap_churn: %ld malloc/free pairs, %.2f ns per pair\n", pairs, ns / pairs);
  print_max_rss();
  return 0;
}
