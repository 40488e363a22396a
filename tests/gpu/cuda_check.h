// The CUDA_CHECK pattern the seed tutorials teach: every runtime call's error checked at once.
#pragma once
#include <cuda_runtime.h>
#include <cstdio>
#include <cstdlib>

#define CHECK(call)                                                                     \
  do {                                                                                  \
    cudaError_t rc_ = (call);                                                           \
    if (rc_ != cudaSuccess) {                                                           \
      std::fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, cudaGetErrorString(rc_)); \
      std::exit(1);                                                                     \
    }                                                                                   \
  } while (0)
