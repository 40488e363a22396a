// Leaks, then dies of SIGSEGV: the report still comes out, naming the signal and the leak.
// EXPECT: leak api=cudaMalloc bytes=4096 count=1 at=@leak
// EXPECT-SIGNAL: SIGSEGV
// EXPECT-EXIT: 139
#include <cuda_runtime.h>

int main() {
  void* p = nullptr;
  if (cudaMalloc(&p, 4096) != cudaSuccess) return 1;  // @leak
  *static_cast<volatile int*>(nullptr) = 1;
  return 0;
}
