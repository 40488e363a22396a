// Pinned memory from cudaHostAlloc handed to libc free: glibc kills the process (an abort for the
// bad chunk, or a segmentation fault reading its header), and the report still comes out, with
// the mismatch recorded before free ran.
// EXPECT: mismatched_free api=free alloc_api=cudaHostAlloc at=@free alloc_at=@alloc
// EXPECT: leak api=cudaHostAlloc bytes=8192 count=1 at=@alloc
// EXPECT-SIGNAL: SIGABRT|SIGSEGV
#include <cuda_runtime.h>
#include <cstdlib>

int main() {
  void* pinned = nullptr;
  if (cudaHostAlloc(&pinned, 8192, cudaHostAllocDefault) != cudaSuccess) return 1;  // @alloc
  std::free(pinned);                                                                // @free
  return 0;
}
