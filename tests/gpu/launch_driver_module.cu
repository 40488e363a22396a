// A program that loads its own module through the driver API (PTX JIT-compiled by the driver,
// as Triton and NVRTC users do) and launches from it with cuLaunchKernel: its kernels are checked
// like any other (cuaudit watches driver launches from the moment the program takes a kernel
// handle with cuModuleGetFunction). The kernel has no C++ name: a freed pointer is still found.
// EXPECT: stale_pointer_param api=cuLaunchKernel count=1 param=0 at=@launch
// EXPECT-EXIT: 0
#include <cuda.h>

#include "cuda_check.h"

static const char kPtx[] = R"(
.version 8.0
.target sm_90
.address_size 64
.visible .entry from_ptx(.param .u64 data, .param .u32 n)
{
  ret;
}
)";

#define CU_CHECK(call) CHECK((call) == CUDA_SUCCESS ? cudaSuccess : cudaErrorUnknown)

int main() {
  float *live = nullptr, *gone = nullptr;
  CHECK(cudaMalloc(&live, 4096));  // also makes the runtime's context current for the driver calls
  CHECK(cudaMalloc(&gone, 4096));
  CHECK(cudaFree(gone));
  CUmodule module;
  CU_CHECK(cuModuleLoadData(&module, kPtx));
  CUfunction f;
  CU_CHECK(cuModuleGetFunction(&f, module, "from_ptx"));
  int n = 0;
  void* args[] = {&live, &n};
  CU_CHECK(cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, nullptr, args, nullptr));
  args[0] = &gone;
  CU_CHECK(cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, nullptr, args, nullptr));  // @launch
  CHECK(cudaDeviceSynchronize());
  CU_CHECK(cuModuleUnload(module));
  CHECK(cudaFree(live));
  return 0;
}
