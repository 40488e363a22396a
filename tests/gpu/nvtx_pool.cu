// A pool annotated with NVTX's memory API (examples/annotated_pool.h): cuaudit sees its blocks.
// One block is never given back (it leaks when the pool unregisters its heap), one is given back
// twice, a kernel is launched with a pointer into a block already given back (the pool's memory
// is still allocated: nothing but the annotations can tell), and another with a float4 pointer
// 4 bytes into a block (the finding names the block, not the pool's one big allocation).
// EXPECT: leak api=nvtxMemRegionsRegister bytes=4096 count=1 via=@forgotten note=still_handed_out_when_its_pool
// EXPECT: double_free api=nvtxMemRegionsUnregister via=@again
// EXPECT: stale_pointer_param api=cudaLaunchKernel param=0 type=float* offset=0 at=@stale
// EXPECT: misaligned_param api=cudaLaunchKernel param=0 type=float4* align=16 offset=4 at=@misaligned
// EXPECT-EXIT: 0
#include "annotated_pool.h"
#include "cuda_check.h"

__global__ void scale(float* data, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) data[i] *= 2;
}

__global__ void scale4(float4* data, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) data[i].x *= 2;
}

int main() {
  AnnotatedPool pool("requests", 4096, 64);
  void* kept = pool.take();  // @forgotten
  (void)kept;

  void* twice = pool.take();
  pool.give_back(twice);
  pool.give_back(twice);  // @again

  float* done = static_cast<float*>(pool.take());
  pool.give_back(done);
  scale<<<1, 32>>>(done, 0);  // @stale
  CHECK(cudaDeviceSynchronize());

  float* block = static_cast<float*>(pool.take());
  scale4<<<1, 32>>>(reinterpret_cast<float4*>(block + 1), 0);  // @misaligned
  CHECK(cudaDeviceSynchronize());
  pool.give_back(block);
  return 0;
}
