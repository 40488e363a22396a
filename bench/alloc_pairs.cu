// The seeds' experiment: N allocate/use/free pairs of 4 KiB (default 100,000), each with a small
// kernel on the memory, or without it ("nokernel": cudaMalloc and cudaFree alone). Prints the time
// per pair; bench/run_bench.sh runs it natively and under cuaudit and prints the ratio.
#include <cuda_runtime.h>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "max_rss.h"

__global__ void touch(char* p, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) p[i] = static_cast<char>(i);
}

int main(int argc, char** argv) {
  const int pairs = argc > 1 ? std::atoi(argv[1]) : 100000;
  const bool kernel = !(argc > 2 && std::strcmp(argv[2], "nokernel") == 0);
  const int bytes = 4096;
  cudaFree(nullptr);  // create the context outside the timed loop
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < pairs; ++i) {
    char* p = nullptr;
    if (cudaMalloc(&p, bytes) != cudaSuccess) return 1;
    if (kernel) touch<<<bytes / 256, 256>>>(p, bytes);
    if (cudaFree(p) != cudaSuccess) return 1;
  }
  if (cudaDeviceSynchronize() != cudaSuccess) return 1;
  const double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count();
  std::printf("alloc_pairs: %d pairs of %d bytes%s, %.2f us per pair\n", pairs, bytes, kernel ? " with a kernel" : "",
              us / pairs);
  print_max_rss();
  return 0;
}
