// Memory that rises and falls in three phases (1 GiB, 3 GiB, 2 GiB, each held ~300 ms, with
// ~200 ms between them), all released: no findings, and a timeline whose peaks
// check_timeline.py compares with what the program did.
// EXPECT-EXIT: 0
#include <chrono>
#include <cstdio>
#include <thread>
#include <vector>

#include <cuda_runtime.h>

#include "cuda_check.h"

constexpr size_t kChunk = 256u << 20;  // 256 MiB per allocation

__global__ void touch(char* data, size_t n) {
  for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x) data[i] = 1;
}

static void hold(std::vector<char*>& chunks) {
  for (char* c : chunks) touch<<<1024, 256>>>(c, kChunk);
  CHECK(cudaDeviceSynchronize());
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  for (char* c : chunks) CHECK(cudaFree(c));
  chunks.clear();
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
}

static void phase_one(std::vector<char*>& chunks) {
  for (int i = 0; i < 4; ++i) {
    char* c = nullptr;
    CHECK(cudaMalloc(&c, kChunk));  // @phase1
    chunks.push_back(c);
  }
  hold(chunks);
}

static void phase_two(std::vector<char*>& chunks) {
  for (int i = 0; i < 12; ++i) {
    char* c = nullptr;
    CHECK(cudaMalloc(&c, kChunk));  // @phase2
    chunks.push_back(c);
  }
  hold(chunks);
}

static void phase_three(std::vector<char*>& chunks) {
  for (int i = 0; i < 8; ++i) {
    char* c = nullptr;
    CHECK(cudaMalloc(&c, kChunk));  // @phase3
    chunks.push_back(c);
  }
  hold(chunks);
}

int main() {
  CHECK(cudaFree(nullptr));  // create the context first: the baseline before phase one
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  std::vector<char*> chunks;
  phase_one(chunks);
  phase_two(chunks);
  phase_three(chunks);
  std::puts("phases done");
  return 0;
}
