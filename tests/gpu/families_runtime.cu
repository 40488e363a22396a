// One leak per runtime allocation family; each must be named by its own API at its own line.
// EXPECT: leak api=cudaMalloc bytes=1000 count=1 at=@malloc
// EXPECT: leak api=cudaMallocPitch bytes=* count=1 at=@pitch
// EXPECT: leak api=cudaMalloc3D bytes=* count=1 at=@m3d
// EXPECT: leak api=cudaMallocArray bytes=4096 count=1 at=@array
// EXPECT: leak api=cudaMalloc3DArray bytes=32768 count=1 at=@array3d
// EXPECT: leak api=cudaMallocMipmappedArray bytes=* count=1 at=@mipmap
// EXPECT: leak api=cudaMallocManaged bytes=2000 count=1 at=@managed
// EXPECT: leak api=cudaMallocHost bytes=3000 count=1 at=@host
// EXPECT: leak api=cudaHostAlloc bytes=4000 count=1 at=@hostalloc
// EXPECT: leak api=cudaHostRegister bytes=65536 count=1 at=@register
// EXPECT: leak api=cudaMallocAsync bytes=5000 count=1 at=@async
// EXPECT: leak api=cudaMallocFromPoolAsync bytes=6000 count=1 at=@pool
// EXPECT-EXIT: 0
#include <cuda_runtime.h>
#include <cstdio>
#include <cstdlib>

#include "cuda_check.h"

int main() {
  void* p;
  size_t pitch;
  CHECK(cudaMalloc(&p, 1000));                  // @malloc
  CHECK(cudaMallocPitch(&p, &pitch, 100, 10));  // @pitch
  cudaPitchedPtr pp;
  CHECK(cudaMalloc3D(&pp, make_cudaExtent(64, 4, 2)));  // @m3d
  cudaChannelFormatDesc desc = cudaCreateChannelDesc<float>();
  cudaArray_t array, array3d;
  CHECK(cudaMallocArray(&array, &desc, 32, 32));                           // @array
  CHECK(cudaMalloc3DArray(&array3d, &desc, make_cudaExtent(16, 16, 32)));  // @array3d
  cudaMipmappedArray_t mipmap;
  CHECK(cudaMallocMipmappedArray(&mipmap, &desc, make_cudaExtent(64, 64, 0), 3));  // @mipmap
  CHECK(cudaMallocManaged(&p, 2000));                                              // @managed
  CHECK(cudaMallocHost(&p, 3000));                                                 // @host
  CHECK(cudaHostAlloc(&p, 4000, cudaHostAllocDefault));                            // @hostalloc
  void* user = std::aligned_alloc(4096, 65536);
  CHECK(cudaHostRegister(user, 65536, cudaHostRegisterDefault));  // @register
  cudaStream_t stream;
  CHECK(cudaStreamCreate(&stream));
  CHECK(cudaMallocAsync(&p, 5000, stream));  // @async
  cudaMemPoolProps props = {};
  props.allocType = cudaMemAllocationTypePinned;
  props.location.type = cudaMemLocationTypeDevice;
  props.location.id = 0;
  cudaMemPool_t pool;
  CHECK(cudaMemPoolCreate(&pool, &props));
  CHECK(cudaMallocFromPoolAsync(&p, 6000, pool, stream));  // @pool
  CHECK(cudaStreamSynchronize(stream));
  return 0;
}
