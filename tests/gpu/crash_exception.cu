// Leaks, then an uncaught C++ exception ends it (std::terminate, then abort).
// EXPECT: leak api=cudaMallocHost bytes=1024 count=1 at=@leak
// EXPECT-SIGNAL: SIGABRT
// EXPECT-EXIT: 134
#include <cuda_runtime.h>
#include <stdexcept>

int main() {
  void* p = nullptr;
  if (cudaMallocHost(&p, 1024) != cudaSuccess) return 1;  // @leak
  throw std::runtime_error("nobody catches this");
}
