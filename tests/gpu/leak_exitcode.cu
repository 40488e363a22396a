// --error-exitcode turns findings into the gate's status.
// CUAUDIT-ARGS: --error-exitcode 7
// EXPECT: leak api=cudaMalloc bytes=256 count=1 at=@leak
// EXPECT-EXIT: 7
#include <cuda_runtime.h>

int main() {
  void* p = nullptr;
  cudaError_t rc = cudaMalloc(&p, 256);  // @leak
  return rc == cudaSuccess ? 0 : 1;
}
