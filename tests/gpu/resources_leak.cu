// --track-resources: a server that creates a stream and an event per request and never destroys
// them, and instantiates one graph it never destroys; the handles it does destroy (a graph, a
// memory pool, a texture object, a module, a graph made, cloned and instantiated through the driver
// API) are clean. One resource_leak per creation site.
// CUAUDIT-ARGS: --track-resources
// EXPECT: resource_leak api=cudaStreamCreate count=8 at=@stream
// EXPECT: resource_leak api=cudaEventCreate count=8 at=@event
// EXPECT: resource_leak api=cudaGraphInstantiate count=1 at=@exec
// EXPECT-EXIT: 0
#include <cuda.h>

#include "cuda_check.h"

__global__ void work(float* data) { data[threadIdx.x] += 1.0f; }

static void serve(float* data) {
  cudaStream_t stream;
  CHECK(cudaStreamCreate(&stream));  // @stream
  cudaEvent_t done;
  CHECK(cudaEventCreate(&done));  // @event
  work<<<1, 32, 0, stream>>>(data);
  CHECK(cudaEventRecord(done, stream));
  CHECK(cudaEventSynchronize(done));
}

int main() {
  float* data = nullptr;
  CHECK(cudaMalloc(&data, 32 * sizeof(float)));
  for (int request = 0; request < 8; ++request) serve(data);

  cudaGraph_t graph;
  CHECK(cudaGraphCreate(&graph, 0));
  cudaGraphNode_t empty;
  CHECK(cudaGraphAddEmptyNode(&empty, graph, nullptr, 0));
  cudaGraphExec_t exec;
  CHECK(cudaGraphInstantiate(&exec, graph, 0));  // @exec
  CHECK(cudaGraphLaunch(exec, 0));
  CHECK(cudaDeviceSynchronize());
  CHECK(cudaGraphDestroy(graph));

  cudaMemPoolProps props{};
  props.allocType = cudaMemAllocationTypePinned;
  props.location.type = cudaMemLocationTypeDevice;
  props.location.id = 0;
  cudaMemPool_t pool;
  CHECK(cudaMemPoolCreate(&pool, &props));
  CHECK(cudaMemPoolDestroy(pool));

  cudaResourceDesc resource{};
  resource.resType = cudaResourceTypeLinear;
  resource.res.linear.devPtr = data;
  resource.res.linear.desc = cudaCreateChannelDesc<float>();
  resource.res.linear.sizeInBytes = 32 * sizeof(float);
  cudaTextureDesc texture{};
  cudaTextureObject_t tex = 0;
  CHECK(cudaCreateTextureObject(&tex, &resource, &texture, nullptr));
  CHECK(cudaDestroyTextureObject(tex));

  // A module loaded and unloaded through the driver API (PTX JIT-compiled by the driver).
  const char* ptx = ".version 7.0\n.target sm_50\n.address_size 64\n.visible .entry nothing() { ret; }\n";
  CUmodule module;
  if (cuModuleLoadData(&module, ptx) != CUDA_SUCCESS) return 4;
  if (cuModuleUnload(module) != CUDA_SUCCESS) return 4;

  // A graph through the driver API: its destruction is as much the program's as its creation.
  CUgraph driver_graph, driver_clone;
  if (cuGraphCreate(&driver_graph, 0) != CUDA_SUCCESS) return 4;
  CUgraphNode driver_empty;
  if (cuGraphAddEmptyNode(&driver_empty, driver_graph, nullptr, 0) != CUDA_SUCCESS) return 4;
  if (cuGraphClone(&driver_clone, driver_graph) != CUDA_SUCCESS) return 4;
  CUgraphExec driver_exec;
  if (cuGraphInstantiate(&driver_exec, driver_graph, 0) != CUDA_SUCCESS) return 4;
  if (cuGraphExecDestroy(driver_exec) != CUDA_SUCCESS) return 4;
  if (cuGraphDestroy(driver_clone) != CUDA_SUCCESS) return 4;
  if (cuGraphDestroy(driver_graph) != CUDA_SUCCESS) return 4;

  CHECK(cudaFree(data));
  return 0;
}
