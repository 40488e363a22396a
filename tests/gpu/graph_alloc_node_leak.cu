// Graph memory nodes: memory allocated at each launch of a graph, at the address fixed when the
// node was made. A graph that allocates 1 MiB without a free node, instantiated to free it
// automatically before each relaunch, replayed 10 times: the last launch's memory leaks, reported
// at the node's creation with the number of launches. A second graph's memory is freed outside
// the graph after each launch (cudaFreeAsync, then cudaFree): clean. A third graph frees what it
// allocates with a free node: clean.
// EXPECT: leak api=cudaGraphAddMemAllocNode bytes=1048576 count=1 at=@alloc-node note=launched_10_time(s)
// EXPECT-EXIT: 0
#include "cuda_check.h"

__global__ void fill(float* data, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) data[i] = 1.0f;
}

// A graph of: alloc node -> kernel writing the memory [-> free node].
static cudaGraph_t make_graph(size_t bytes, bool free_inside, void** address) {
  int device = 0;
  CHECK(cudaGetDevice(&device));
  cudaGraph_t graph;
  CHECK(cudaGraphCreate(&graph, 0));
  cudaMemAllocNodeParams alloc{};
  alloc.poolProps.allocType = cudaMemAllocationTypePinned;
  alloc.poolProps.location.type = cudaMemLocationTypeDevice;
  alloc.poolProps.location.id = device;
  alloc.bytesize = bytes;
  cudaGraphNode_t alloc_node;
  if (free_inside) {
    CHECK(cudaGraphAddMemAllocNode(&alloc_node, graph, nullptr, 0, &alloc));
  } else {
    CHECK(cudaGraphAddMemAllocNode(&alloc_node, graph, nullptr, 0, &alloc));  // @alloc-node
  }
  *address = alloc.dptr;
  float* data = static_cast<float*>(alloc.dptr);
  int n = static_cast<int>(bytes / sizeof(float));
  void* args[] = {&data, &n};
  cudaKernelNodeParams kernel{};
  kernel.func = reinterpret_cast<void*>(fill);
  kernel.gridDim = dim3((n + 255) / 256);
  kernel.blockDim = dim3(256);
  kernel.kernelParams = args;
  cudaGraphNode_t kernel_node;
  CHECK(cudaGraphAddKernelNode(&kernel_node, graph, &alloc_node, 1, &kernel));
  if (free_inside) {
    cudaGraphNode_t free_node;
    CHECK(cudaGraphAddMemFreeNode(&free_node, graph, &kernel_node, 1, alloc.dptr));
  }
  return graph;
}

int main() {
  cudaStream_t stream;
  CHECK(cudaStreamCreate(&stream));

  void* leaked = nullptr;
  cudaGraph_t leaking = make_graph(1 << 20, false, &leaked);
  cudaGraphExec_t leaking_exec;
  CHECK(cudaGraphInstantiateWithFlags(&leaking_exec, leaking, cudaGraphInstantiateFlagAutoFreeOnLaunch));
  for (int i = 0; i < 10; ++i) CHECK(cudaGraphLaunch(leaking_exec, stream));
  CHECK(cudaStreamSynchronize(stream));

  void* outside = nullptr;
  cudaGraph_t freed_outside = make_graph(1 << 16, false, &outside);
  cudaGraphExec_t outside_exec;
  CHECK(cudaGraphInstantiate(&outside_exec, freed_outside, 0));
  CHECK(cudaGraphLaunch(outside_exec, stream));
  CHECK(cudaFreeAsync(outside, stream));
  CHECK(cudaGraphLaunch(outside_exec, stream));
  CHECK(cudaStreamSynchronize(stream));
  CHECK(cudaFree(outside));

  void* inside = nullptr;
  cudaGraph_t freed_inside = make_graph(1 << 16, true, &inside);
  cudaGraphExec_t inside_exec;
  CHECK(cudaGraphInstantiate(&inside_exec, freed_inside, 0));
  for (int i = 0; i < 10; ++i) CHECK(cudaGraphLaunch(inside_exec, stream));
  CHECK(cudaStreamSynchronize(stream));

  // Destroying the graphs does not free what their launches left allocated.
  for (cudaGraphExec_t e : {leaking_exec, outside_exec, inside_exec}) CHECK(cudaGraphExecDestroy(e));
  for (cudaGraph_t g : {leaking, freed_outside, freed_inside}) CHECK(cudaGraphDestroy(g));
  CHECK(cudaStreamDestroy(stream));
  return 0;
}
