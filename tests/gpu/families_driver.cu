// One leak per driver allocation family, virtual memory management included.
// EXPECT: leak api=cuMemAlloc bytes=1000 count=1 at=@alloc
// EXPECT: leak api=cuMemAllocPitch bytes=* count=1 at=@pitch
// EXPECT: leak api=cuMemAllocManaged bytes=2000 count=1 at=@managed
// EXPECT: leak api=cuMemAllocHost bytes=3000 count=1 at=@host
// EXPECT: leak api=cuMemHostAlloc bytes=4000 count=1 at=@hostalloc
// EXPECT: leak api=cuMemHostRegister bytes=65536 count=1 at=@register
// EXPECT: leak api=cuMemAllocAsync bytes=5000 count=1 at=@async
// EXPECT: leak api=cuMemAllocFromPoolAsync bytes=6000 count=1 at=@pool
// EXPECT: leak api=cuArrayCreate bytes=4096 count=1 at=@array
// EXPECT: leak api=cuArray3DCreate bytes=8192 count=1 at=@array3d
// EXPECT: leak api=cuMipmappedArrayCreate bytes=* count=1 at=@mipmap
// EXPECT: leak api=cuMemCreate bytes=* count=1 at=@create
// EXPECT: leak api=cuMemAddressReserve bytes=0 count=1 at=@reserve
// EXPECT: leak api=cuMemMap bytes=0 count=1 at=@map
// EXPECT-EXIT: 0
#include <cuda.h>
#include <cstdio>
#include <cstdlib>

#define CHECK(call)                                                           \
  do {                                                                        \
    CUresult rc_ = (call);                                                    \
    if (rc_ != CUDA_SUCCESS) {                                                \
      const char* s_ = nullptr;                                               \
      cuGetErrorString(rc_, &s_);                                             \
      std::fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, s_ ? s_ : "?"); \
      std::exit(1);                                                           \
    }                                                                         \
  } while (0)

int main() {
  CHECK(cuInit(0));
  CUdevice dev;
  CHECK(cuDeviceGet(&dev, 0));
  CUcontext ctx;
  CHECK(cuDevicePrimaryCtxRetain(&ctx, dev));
  CHECK(cuCtxSetCurrent(ctx));

  CUdeviceptr d;
  size_t pitch;
  void* h;
  CHECK(cuMemAlloc(&d, 1000));                               // @alloc
  CHECK(cuMemAllocPitch(&d, &pitch, 100, 10, 4));            // @pitch
  CHECK(cuMemAllocManaged(&d, 2000, CU_MEM_ATTACH_GLOBAL));  // @managed
  CHECK(cuMemAllocHost(&h, 3000));                           // @host
  CHECK(cuMemHostAlloc(&h, 4000, 0));                        // @hostalloc
  void* user = std::aligned_alloc(4096, 65536);
  CHECK(cuMemHostRegister(user, 65536, 0));  // @register
  CUstream stream;
  CHECK(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
  CHECK(cuMemAllocAsync(&d, 5000, stream));  // @async
  CUmemPoolProps pool_props = {};
  pool_props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
  pool_props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  pool_props.location.id = 0;
  CUmemoryPool pool;
  CHECK(cuMemPoolCreate(&pool, &pool_props));
  CHECK(cuMemAllocFromPoolAsync(&d, 6000, pool, stream));  // @pool
  CHECK(cuStreamSynchronize(stream));

  CUDA_ARRAY_DESCRIPTOR ad = {};
  ad.Width = 32;
  ad.Height = 32;
  ad.Format = CU_AD_FORMAT_FLOAT;
  ad.NumChannels = 1;
  CUarray array;
  CHECK(cuArrayCreate(&array, &ad));  // @array
  CUDA_ARRAY3D_DESCRIPTOR ad3 = {};
  ad3.Width = 16;
  ad3.Height = 16;
  ad3.Depth = 8;
  ad3.Format = CU_AD_FORMAT_UNSIGNED_INT32;
  ad3.NumChannels = 1;
  CUarray array3d;
  CHECK(cuArray3DCreate(&array3d, &ad3));  // @array3d
  CUDA_ARRAY3D_DESCRIPTOR md = ad3;
  md.Depth = 0;
  CUmipmappedArray mipmap;
  CHECK(cuMipmappedArrayCreate(&mipmap, &md, 3));  // @mipmap

  CUmemAllocationProp prop = {};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = 0;
  size_t granularity = 0;
  CHECK(cuMemGetAllocationGranularity(&granularity, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
  CUmemGenericAllocationHandle handle;
  CHECK(cuMemCreate(&handle, granularity, &prop, 0));  // @create
  CUdeviceptr va;
  CHECK(cuMemAddressReserve(&va, granularity, 0, 0, 0));  // @reserve
  CHECK(cuMemMap(va, granularity, 0, handle, 0));         // @map
  CUmemAccessDesc access = {};
  access.location = prop.location;
  access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  CHECK(cuMemSetAccess(va, granularity, &access, 1));
  return 0;
}
