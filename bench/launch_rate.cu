// The launch path: N back-to-back launches (default 200,000) of a tiny kernel with four pointer
// parameters (two of them vector types, so the alignment check has work), then one
// synchronization. Prints the time per launch; bench/run_bench.sh compares native, cuaudit and
// compute-sanitizer. With `struct`, the same four pointers travel inside one by-value struct, the
// way PyTorch's and CUTLASS's kernels take theirs: no type check applies, the words' low bits and
// reachability are checked instead.
#include <cuda_runtime.h>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "max_rss.h"

__global__ void tiny(float4* a, const float* b, double2* c, int* flags) {
  if (threadIdx.x == 0 && blockIdx.x == 0 && flags[0] < 0) a[0].x = b[0] + static_cast<float>(c[0].x);
}

struct Args {
  float4* a;
  const float* b;
  double2* c;
  int* flags;
};
__global__ void tiny_struct(Args p) {
  if (threadIdx.x == 0 && blockIdx.x == 0 && p.flags[0] < 0) p.a[0].x = p.b[0] + static_cast<float>(p.c[0].x);
}

int main(int argc, char** argv) {
  const int launches = argc > 1 ? std::atoi(argv[1]) : 200000;
  const bool by_struct = argc > 2 && std::strcmp(argv[2], "struct") == 0;
  float4* a = nullptr;
  float* b = nullptr;
  double2* c = nullptr;
  int* flags = nullptr;
  if (cudaMalloc(&a, 4096) != cudaSuccess || cudaMalloc(&b, 4096) != cudaSuccess ||
      cudaMalloc(&c, 4096) != cudaSuccess || cudaMalloc(&flags, 4096) != cudaSuccess ||
      cudaMemset(flags, 0, 4096) != cudaSuccess)
    return 1;
  for (int i = 0; i < 1000; ++i) tiny<<<1, 32>>>(a, b, c, flags);  // warm up
  if (by_struct) tiny_struct<<<1, 32>>>(Args{a, b, c, flags});
  if (cudaDeviceSynchronize() != cudaSuccess) return 1;
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < launches; ++i) {
    if (by_struct) {
      tiny_struct<<<1, 32>>>(Args{a + (i & 7), b + (i & 7), c + (i & 7), flags});
    } else {
      tiny<<<1, 32>>>(a + (i & 7), b + (i & 7), c + (i & 7), flags);
    }
  }
  if (cudaDeviceSynchronize() != cudaSuccess) return 1;
  const double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count();
  std::printf("launch_rate: %d launches, %.3f us per launch\n", launches, us / launches);
  print_max_rss();
  cudaFree(a), cudaFree(b), cudaFree(c), cudaFree(flags);
  return 0;
}
