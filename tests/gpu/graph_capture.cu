// Stream-ordered allocations captured into a graph become its memory nodes: a buffer allocated and
// freed inside the capture is clean however often the graph runs; one the capture allocates and
// nobody frees leaks at the captured cudaMallocAsync. The kernels given graph memory are not
// reported (the memory exists only while the graph runs).
// EXPECT: leak api=cudaMallocAsync_captured_into_a_graph bytes=16384 count=1 at=@captured-leak note=launched_5_time(s)
// EXPECT-EXIT: 0
#include "cuda_check.h"

__global__ void scale(float* data, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) data[i] *= 2.0f;
}

int main() {
  cudaStream_t stream;
  CHECK(cudaStreamCreate(&stream));
  const int n = 2048;

  cudaGraph_t clean;
  CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
  float* scratch = nullptr;
  CHECK(cudaMallocAsync(&scratch, n * sizeof(float), stream));
  scale<<<(n + 255) / 256, 256, 0, stream>>>(scratch, n);
  CHECK(cudaFreeAsync(scratch, stream));
  CHECK(cudaStreamEndCapture(stream, &clean));
  cudaGraphExec_t clean_exec;
  CHECK(cudaGraphInstantiate(&clean_exec, clean, 0));
  for (int i = 0; i < 10; ++i) CHECK(cudaGraphLaunch(clean_exec, stream));
  CHECK(cudaStreamSynchronize(stream));

  cudaGraph_t leaking;
  CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
  float* kept = nullptr;
  CHECK(cudaMallocAsync(&kept, 2 * n * sizeof(float), stream));  // @captured-leak
  scale<<<(2 * n + 255) / 256, 256, 0, stream>>>(kept, 2 * n);
  CHECK(cudaStreamEndCapture(stream, &leaking));
  cudaGraphExec_t leaking_exec;
  CHECK(cudaGraphInstantiateWithFlags(&leaking_exec, leaking, cudaGraphInstantiateFlagAutoFreeOnLaunch));
  for (int i = 0; i < 5; ++i) CHECK(cudaGraphLaunch(leaking_exec, stream));
  CHECK(cudaStreamSynchronize(stream));

  CHECK(cudaGraphExecDestroy(clean_exec));
  CHECK(cudaGraphExecDestroy(leaking_exec));
  CHECK(cudaGraphDestroy(clean));
  CHECK(cudaGraphDestroy(leaking));
  CHECK(cudaStreamDestroy(stream));
  return 0;
}
