// Kernels whose parameters do not say what alignment they need: the cast to a vector type
// happens inside (the seeds' d_ptr + 1, read as float4 by a kernel that takes const float*), a
// double2 is stored through a char*, a float4* travels inside a by-value struct, the vector path
// is under a branch on the work size, and a kernel compiled from PTX by the driver at run time.
// cuaudit reads what each kernel's machine code accesses (nvdisasm) and compares it with the
// pointers each launch was given. Launches with no work are latent bugs; the last launch has
// work and faults. A kernel that checks its pointers' alignment itself, and the same kernels
// given aligned pointers, are clean.
// Pointer members that no type names: Params.idx launched after its memory was released (stale),
// and pointing into malloc'd host memory (the kernel's code reads through it); a Tagged struct
// whose host-side `label` the kernel never touches is clean.
// Long EXPECT lines: clang-format must not reflow them.
// clang-format off
// EXPECT: misaligned_param api=cudaLaunchKernel count=1 param=0 align=16 offset=4 from=code note=latent at=@scale4-latent
// EXPECT: misaligned_param api=cudaLaunchKernel count=1 param=0 align=16 offset=8 from=code at=@store-d2
// EXPECT: misaligned_param api=cudaLaunchKernel count=1 param=0 member=0 align=16 offset=4 from=code at=@by-params
// EXPECT: misaligned_param api=cudaLaunchKernel count=1 param=1 align=16 offset=4 from=code at=@branchy
// EXPECT: misaligned_param api=cuLaunchKernel count=1 param=0 align=16 offset=4 from=code at=@jit
// EXPECT: stale_pointer_param api=cudaLaunchKernel count=1 param=0 member=8 offset=0 at=@by-params-stale
// EXPECT: host_pointer_param api=cudaLaunchKernel count=1 param=0 member=8 at=@by-params-host
// EXPECT: misaligned_param api=cudaLaunchKernel count=1 param=0 align=16 offset=4 from=code note=cudaErrorMisalignedAddress at=@scale4-fault
// The fault loses the context: what the program had not freed by then stays allocated.
// EXPECT: api_error api=cudaDeviceSynchronize result=cudaErrorMisalignedAddress at=@fault-seen
// EXPECT: leak api=cudaMalloc bytes=16384 count=1 at=@in
// EXPECT: leak api=cudaMalloc bytes=16384 count=1 at=@out
// EXPECT-EXIT: 0
// clang-format on
#include <cuda.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include "cuda_check.h"

__global__ void scale4(const float* in, float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) reinterpret_cast<float4*>(out)[i] = reinterpret_cast<const float4*>(in)[i];
}

__global__ void store_d2(char* bytes, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) reinterpret_cast<double2*>(bytes)[i] = make_double2(1, 2);
}

struct Params {
  float4* out;
  const int* idx;  // read as ints: 4-byte aligned is all it needs
  int n;
};
__global__ void by_params(Params p) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < p.n) p.out[p.idx[i]] = make_float4(1, 2, 3, 4);
}

// Carries a host-side name the kernel never reads (structs shared by host and device code do).
struct Tagged {
  float* data;
  const char* label;
  int n;
};
__global__ void tagged(Tagged t) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < t.n) t.data[i] = 0;
}

// Vector code only for large inputs: small ones take the scalar path, so the bug hides in tests.
__global__ void branchy(const float* in, float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (n > 1024) {
    if (i < n / 4) reinterpret_cast<float4*>(out)[i] = reinterpret_cast<const float4*>(in)[i];
  } else if (i < n) {
    out[i] = in[i];
  }
}

// Checks its pointers' alignment and falls back to scalar code: fine with any float pointer.
__global__ void guarded(const float* in, float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (((reinterpret_cast<uintptr_t>(in) | reinterpret_cast<uintptr_t>(out)) & 15) == 0) {
    if (i * 4 < n) reinterpret_cast<float4*>(out)[i] = reinterpret_cast<const float4*>(in)[i];
  } else {
    for (int k = 0; k < 4; ++k)
      if (i * 4 + k < n) out[i * 4 + k] = in[i * 4 + k];
  }
}

// extern "C" __global__ void jit_copy4(const float* in, float* out, int n): a float4 copy, as
// nvcc -ptx -arch=sm_90 prints it; the driver compiles it when the program loads it.
static const char kPtx[] = R"(
.version 9.0
.target sm_90
.address_size 64
.visible .entry jit_copy4(.param .u64 jit_copy4_param_0, .param .u64 jit_copy4_param_1, .param .u32 jit_copy4_param_2)
{
  .reg .pred %p<2>;
  .reg .b32 %r<14>;
  .reg .b64 %rd<8>;
  ld.param.u64 %rd1, [jit_copy4_param_0];
  ld.param.u64 %rd2, [jit_copy4_param_1];
  ld.param.u32 %r2, [jit_copy4_param_2];
  mov.u32 %r3, %ctaid.x;
  mov.u32 %r4, %ntid.x;
  mov.u32 %r5, %tid.x;
  mad.lo.s32 %r1, %r3, %r4, %r5;
  setp.ge.s32 %p1, %r1, %r2;
  @%p1 bra $L__BB0_2;
  cvta.to.global.u64 %rd3, %rd1;
  cvta.to.global.u64 %rd4, %rd2;
  mul.wide.s32 %rd5, %r1, 16;
  add.s64 %rd6, %rd4, %rd5;
  add.s64 %rd7, %rd3, %rd5;
  ld.global.v4.u32 {%r6, %r7, %r8, %r9}, [%rd7];
  st.global.v4.u32 [%rd6], {%r6, %r7, %r8, %r9};
$L__BB0_2:
  ret;
}
)";

#define CU_CHECK(call) CHECK((call) == CUDA_SUCCESS ? cudaSuccess : cudaErrorUnknown)

int main() {
  constexpr int kFloats = 4096;
  float *in = nullptr, *out = nullptr;
  int* idx = nullptr;
  CHECK(cudaMalloc(&in, kFloats * sizeof(float)));   // @in
  CHECK(cudaMalloc(&out, kFloats * sizeof(float)));  // @out
  CHECK(cudaMalloc(&idx, 1024 * sizeof(int)));
  CHECK(cudaMemset(in, 0, kFloats * sizeof(float)));
  CHECK(cudaMemset(idx, 0, 1024 * sizeof(int)));

  scale4<<<1, 32>>>(in + 1, out, 0);                         // @scale4-latent
  scale4<<<1, 32>>>(in, out, 32);                            // aligned, with work: clean
  store_d2<<<1, 32>>>(reinterpret_cast<char*>(out) + 8, 0);  // @store-d2
  Params p{reinterpret_cast<float4*>(out + 1), idx + 1, 0};
  by_params<<<1, 32>>>(p);                            // @by-params
  branchy<<<1, 32>>>(in, out + 1, 100);               // @branchy
  guarded<<<4, 256>>>(in + 1, out + 3, kFloats - 4);  // misaligned, with work, checked by the kernel: clean
  CHECK(cudaDeviceSynchronize());

  CUmodule module;
  CU_CHECK(cuModuleLoadData(&module, kPtx));
  CUfunction copy4;
  CU_CHECK(cuModuleGetFunction(&copy4, module, "jit_copy4"));
  float* jit_in = in + 1;
  int none = 0;
  void* args[] = {&jit_in, &out, &none};
  CU_CHECK(cuLaunchKernel(copy4, 1, 1, 1, 32, 1, 1, 0, nullptr, args, nullptr));  // @jit
  CHECK(cudaDeviceSynchronize());
  CU_CHECK(cuModuleUnload(module));
  CHECK(cudaFree(idx));
  Params stale{reinterpret_cast<float4*>(out), idx, 0};  // idx was released: a stale member
  by_params<<<1, 32>>>(stale);                           // @by-params-stale
  int* host_idx = static_cast<int*>(malloc(1024 * sizeof(int)));
  Params on_host{reinterpret_cast<float4*>(out), host_idx, 0};  // pageable host memory the kernel reads
  by_params<<<1, 32>>>(on_host);                                // @by-params-host
  static const char kLabel[] = "host-side name";
  tagged<<<1, 32>>>(Tagged{out, kLabel, 32});  // label is host memory, never read by the kernel: clean
  CHECK(cudaDeviceSynchronize());
  free(host_idx);

  // With work: the kernel faults and the context is lost; the program reports it and ends.
  scale4<<<1, 32>>>(in + 1, out, 32);                 // @scale4-fault
  const cudaError_t fault = cudaDeviceSynchronize();  // @fault-seen
  printf("scale4 with work: %s\n", cudaGetErrorName(fault));
  return 0;
}
