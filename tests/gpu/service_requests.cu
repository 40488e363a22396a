// A service that handles "requests" for SECONDS (default 60), 20 a second. Each request allocates a
// scratch buffer, runs a kernel on it and frees it, and stages its result through pinned memory it
// frees too (both level over the run); and, by mistake, keeps a 1 MiB response buffer in a cache
// that is never trimmed (remember_response: live memory climbing ~20 MiB a second to the end).
// check_service.py runs it with --snapshot-interval and `cuaudit snapshot`: the interim reports show
// the cache's site climbing, the final report has one growth finding, at the @grows line.
// Usage: service_requests [SECONDS]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

#include <cuda_runtime.h>

#include "cuda_check.h"

constexpr size_t kScratch = 8u << 20;
constexpr size_t kResponse = 1u << 20;

__global__ void fill(float* data, size_t n, float value) {
  for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x) data[i] = value;
}

static std::vector<float*> g_response_cache;  // never trimmed: the bug

static void handle_request(int request) {
  float* scratch = nullptr;
  CHECK(cudaMalloc(&scratch, kScratch));  // @level
  fill<<<256, 256>>>(scratch, kScratch / sizeof(float), static_cast<float>(request));
  CHECK(cudaGetLastError());
  float* staging = nullptr;
  CHECK(cudaMallocHost(&staging, 4096));
  CHECK(cudaMemcpy(staging, scratch, 4096, cudaMemcpyDeviceToHost));
  CHECK(cudaFreeHost(staging));
  CHECK(cudaFree(scratch));
}

static void remember_response(int request) {
  float* response = nullptr;
  CHECK(cudaMalloc(&response, kResponse));  // @grows
  fill<<<64, 256>>>(response, kResponse / sizeof(float), static_cast<float>(request));
  CHECK(cudaGetLastError());
  g_response_cache.push_back(response);
}

int main(int argc, char** argv) {
  const double seconds = argc > 1 ? std::atof(argv[1]) : 60.0;
  const auto start = std::chrono::steady_clock::now();
  const auto end = start + std::chrono::duration<double>(seconds);
  int requests = 0;
  for (auto next = start; std::chrono::steady_clock::now() < end; ++requests) {
    handle_request(requests);
    remember_response(requests);
    CHECK(cudaDeviceSynchronize());
    next += std::chrono::milliseconds(50);
    std::this_thread::sleep_until(next);
  }
  std::printf("served %d requests in %.0f s; %zu responses cached\n", requests, seconds, g_response_cache.size());
  return 0;
}
