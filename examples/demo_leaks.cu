// cuaudit's demo: a small pipeline with the two leaks the seed tutorials warn about most.
//   1. a scratch buffer allocated in every batch and never freed (grows until out of memory);
//   2. a pinned staging buffer whose owner forgot cudaFreeHost on one path.
// Everything else is released correctly. Run it: cuaudit ./demo_leaks
#include <cuda_runtime.h>
#include <cstdio>
#include <cstdlib>

#define CUDA_CHECK(call)                                                                \
  do {                                                                                  \
    cudaError_t rc_ = (call);                                                           \
    if (rc_ != cudaSuccess) {                                                           \
      std::fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, cudaGetErrorString(rc_)); \
      std::exit(1);                                                                     \
    }                                                                                   \
  } while (0)

__global__ void normalize(const float* in, float* out, int n, float scale) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = in[i] * scale;
}

static float* upload(const float* host, int n) {
  float* staging = nullptr;
  CUDA_CHECK(cudaMallocHost(&staging, n * sizeof(float)));
  for (int i = 0; i < n; ++i) staging[i] = host[i];
  float* device = nullptr;
  CUDA_CHECK(cudaMalloc(&device, n * sizeof(float)));
  CUDA_CHECK(cudaMemcpy(device, staging, n * sizeof(float), cudaMemcpyHostToDevice));
  if (n > 1000) return device;  // Bug: the early return skips cudaFreeHost(staging).
  CUDA_CHECK(cudaFreeHost(staging));
  return device;
}

static void process_batch(const float* input, int n, int batch) {
  float* scratch = nullptr;
  CUDA_CHECK(cudaMalloc(&scratch, n * sizeof(float)));  // Bug: never freed.
  normalize<<<(n + 255) / 256, 256>>>(input, scratch, n, 1.0f / (batch + 1));
  CUDA_CHECK(cudaGetLastError());
}

int main(int argc, char** argv) {
  const int batches = argc > 1 ? std::atoi(argv[1]) : 20;
  const int n = 4096;
  float* host = static_cast<float*>(std::malloc(n * sizeof(float)));
  for (int i = 0; i < n; ++i) host[i] = static_cast<float>(i);
  float* input = upload(host, n);
  for (int b = 0; b < batches; ++b) process_batch(input, n, b);
  CUDA_CHECK(cudaDeviceSynchronize());
  CUDA_CHECK(cudaFree(input));
  std::free(host);
  std::printf("processed %d batches\n", batches);
  return 0;
}
