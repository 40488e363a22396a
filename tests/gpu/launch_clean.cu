// Aligned launches of every kind the checks look at: no findings. Vector pointers at whole-vector
// offsets, null optional pointers, pinned/managed memory, pool memory, by-value structs holding
// odd values, an extern "C" kernel with integer arguments, and a pointer into a VMM mapping.
// EXPECT-EXIT: 0
#include <cuda.h>

#include "cuda_check.h"

struct Params {
  float* data;  // inside a by-value struct: not a parameter of its own
  long long odd;
};

__global__ void write4(float4* out, const double2* in, short4* s, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = make_float4(in[i].x, in[i].y, s[i].x, 0);
}

__global__ void by_value(Params p, int n) {
  if (n > 0) p.data[0] = static_cast<float>(p.odd);
}

extern "C" __global__ void counts(long long a, long long b, unsigned long long c) {
  if (a < 0) printf("%lld %lld %llu\n", a, b, c);
}

template <typename T>
__global__ void fill(T* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = T{};
}

int main() {
  float4* a = nullptr;
  double2* b = nullptr;
  short4* s = nullptr;
  CHECK(cudaMalloc(&a, 1 << 16));
  CHECK(cudaMallocManaged(&b, 1 << 16));
  CHECK(cudaMallocHost(&s, 1 << 16));
  for (int i = 0; i < 100; ++i) write4<<<1, 32>>>(a + i, b + i, s + i, 32);
  write4<<<1, 32>>>(a, b, nullptr, 0);
  // A float* one float in is fine for the float store the kernel makes through it (kernel_access.cu
  // has one a byte off); the odd integer beside it is no pointer.
  by_value<<<1, 1>>>(Params{reinterpret_cast<float*>(a) + 1, 12345}, 0);
  counts<<<1, 1>>>(1, 3, 0x1234);
  cudaStream_t stream;
  CHECK(cudaStreamCreate(&stream));
  int4* pooled = nullptr;
  CHECK(cudaMallocAsync(&pooled, 1 << 16, stream));
  fill<int4><<<1, 32, 0, stream>>>(pooled + 3, 32);
  CHECK(cudaFreeAsync(pooled, stream));

  // A VMM mapping: reserved, backed and mapped by the driver API.
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = 0;
  size_t granularity = 0;
  cuMemGetAllocationGranularity(&granularity, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM);
  CUdeviceptr va = 0;
  CUmemGenericAllocationHandle handle;
  if (cuMemAddressReserve(&va, granularity, 0, 0, 0) == CUDA_SUCCESS &&
      cuMemCreate(&handle, granularity, &prop, 0) == CUDA_SUCCESS &&
      cuMemMap(va, granularity, 0, handle, 0) == CUDA_SUCCESS) {
    CUmemAccessDesc access{};
    access.location = prop.location;
    access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    cuMemSetAccess(va, granularity, &access, 1);
    fill<float4><<<1, 32>>>(reinterpret_cast<float4*>(va) + 2, 32);
    CHECK(cudaDeviceSynchronize());
    cuMemUnmap(va, granularity);
    cuMemRelease(handle);
    cuMemAddressFree(va, granularity);
  }
  CHECK(cudaGetLastError());
  CHECK(cudaDeviceSynchronize());
  CHECK(cudaStreamDestroy(stream));
  CHECK(cudaFree(a));
  CHECK(cudaFree(b));
  CHECK(cudaFreeHost(s));
  return 0;
}
