// Graph kernels are checked where their parameters are given: a misaligned float4* captured
// from a stream is reported once at the captured launch (not at each of the 5 replays), one in
// a node added with cudaGraphAddKernelNode at that call, and a stale pointer set later with
// cudaGraphExecKernelNodeSetParams at that call.
// EXPECT: misaligned_param api=cudaLaunchKernel count=1 param=0 type=float4* at=@captured
// EXPECT: misaligned_param api=cudaGraphAddKernelNode count=1 param=0 type=float4* at=@added
// EXPECT: stale_pointer_param api=cudaGraphExecKernelNodeSetParams count=1 param=0 at=@updated
// EXPECT-EXIT: 0
#include "cuda_check.h"

__global__ void write4(float4* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = make_float4(1, 2, 3, 4);
}

int main() {
  float* d = nullptr;
  CHECK(cudaMalloc(&d, 4096));
  cudaStream_t stream;
  CHECK(cudaStreamCreate(&stream));

  cudaGraph_t captured;
  CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
  write4<<<1, 32, 0, stream>>>(reinterpret_cast<float4*>(d + 1), 0);  // @captured
  CHECK(cudaStreamEndCapture(stream, &captured));
  cudaGraphExec_t exec;
  CHECK(cudaGraphInstantiate(&exec, captured, 0));
  for (int i = 0; i < 5; ++i) CHECK(cudaGraphLaunch(exec, stream));
  CHECK(cudaStreamSynchronize(stream));

  cudaGraph_t built;
  CHECK(cudaGraphCreate(&built, 0));
  float4* misaligned = reinterpret_cast<float4*>(d + 2);
  int n = 0;
  void* args[] = {&misaligned, &n};
  cudaKernelNodeParams params{};
  params.func = reinterpret_cast<void*>(write4);
  params.gridDim = dim3(1);
  params.blockDim = dim3(32);
  params.kernelParams = args;
  cudaGraphNode_t node;
  CHECK(cudaGraphAddKernelNode(&node, built, nullptr, 0, &params));  // @added

  float4* aligned = reinterpret_cast<float4*>(d + 4);
  args[0] = &aligned;
  CHECK(cudaGraphKernelNodeSetParams(node, &params));  // fixed in the graph
  cudaGraphExec_t built_exec;
  CHECK(cudaGraphInstantiate(&built_exec, built, 0));
  float* gone = nullptr;
  CHECK(cudaMalloc(&gone, 4096));
  CHECK(cudaFree(gone));
  float4* stale = reinterpret_cast<float4*>(gone);
  args[0] = &stale;
  CHECK(cudaGraphExecKernelNodeSetParams(built_exec, node, &params));  // @updated
  CHECK(cudaGraphLaunch(built_exec, stream));
  CHECK(cudaStreamSynchronize(stream));

  CHECK(cudaGraphExecDestroy(built_exec));
  CHECK(cudaGraphDestroy(built));
  CHECK(cudaGraphExecDestroy(exec));
  CHECK(cudaGraphDestroy(captured));
  CHECK(cudaStreamDestroy(stream));
  CHECK(cudaFree(d));
  return 0;
}
