// Leaks, then ends with _exit(3), which skips every exit hook.
// EXPECT: leak api=cudaMalloc bytes=2048 count=1 at=@leak
// EXPECT-EXIT: 3
// EXPECT-NOTE: _exit(3)
#include <cuda_runtime.h>
#include <unistd.h>

int main() {
  void* p = nullptr;
  if (cudaMalloc(&p, 2048) != cudaSuccess) return 1;  // @leak
  _exit(3);
}
