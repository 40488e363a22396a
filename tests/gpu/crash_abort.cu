// Leaks, then calls abort().
// EXPECT: leak api=cudaMallocManaged bytes=8192 count=1 at=@leak
// EXPECT-SIGNAL: SIGABRT
// EXPECT-EXIT: 134
#include <cuda_runtime.h>
#include <cstdlib>

int main() {
  void* p = nullptr;
  if (cudaMallocManaged(&p, 8192) != cudaSuccess) return 1;  // @leak
  std::abort();
}
