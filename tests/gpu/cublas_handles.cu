// A server that creates a cuBLAS handle per request and never destroys it: each handle keeps its
// workspace (about 64 MiB on an H200) until the process ends. The handle made for the warm-up is
// destroyed and leaks nothing. One finding, at the create call, naming the destroy that was missing.
// EXPECT: leak api=cublasCreate via=@create note=never_cublasDestroy
// EXPECT-EXIT: 0
#include <cublas_v2.h>

#include "cuda_check.h"

static void gemm(cublasHandle_t handle, float* a, int n) {
  const float one = 1, zero = 0;
  cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, a, n, a, n, &zero, a, n);
}

static void serve(float* a, int n) {
  cublasHandle_t handle;
  if (cublasCreate(&handle) != CUBLAS_STATUS_SUCCESS) std::exit(1);  // @create
  gemm(handle, a, n);
  CHECK(cudaDeviceSynchronize());
}

int main() {
  const int n = 64;
  float* a = nullptr;
  CHECK(cudaMalloc(&a, n * n * sizeof(float)));
  CHECK(cudaMemset(a, 0, n * n * sizeof(float)));
  cublasHandle_t warmup;
  if (cublasCreate(&warmup) != CUBLAS_STATUS_SUCCESS) return 1;
  gemm(warmup, a, n);
  CHECK(cudaDeviceSynchronize());
  cublasDestroy(warmup);
  for (int request = 0; request < 3; ++request) serve(a, n);
  CHECK(cudaFree(a));
  return 0;
}
