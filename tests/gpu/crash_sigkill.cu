// Leaks, lives past the flush interval (100 ms), then is killed with SIGKILL, which nothing can
// catch: the leak is in the trace because the flusher wrote it.
// EXPECT: leak api=cudaMalloc bytes=65536 count=1 at=@leak
// EXPECT-SIGNAL: SIGKILL
// EXPECT-EXIT: 137
#include <cuda_runtime.h>
#include <unistd.h>
#include <csignal>

int main() {
  void* p = nullptr;
  if (cudaMalloc(&p, 65536) != cudaSuccess) return 1;  // @leak
  usleep(300 * 1000);
  kill(getpid(), SIGKILL);
  return 0;
}
