// Two processes sharing device memory through a CUDA IPC handle. The child opens the parent's
// buffer and never closes it: a leak of the child, at its cudaIpcOpenMemHandle (the bytes are the
// parent's). The parent frees the buffer while the child still has it open: a warning at the
// parent's cudaFree. The child is forked before either process touches CUDA.
// EXPECT: leak api=cudaIpcOpenMemHandle bytes=0 count=1 at=@open process=child note=memory_of_another_process
// EXPECT: freed_while_imported api=cudaFree severity=warning at=@free-shared process=main
// EXPECT-PROCESSES: 2
// EXPECT-EXIT: 0
#include <sys/wait.h>
#include <unistd.h>

#include "cuda_check.h"

__global__ void touch(int* data) { data[threadIdx.x] += 1; }

static void send(int fd, const void* p, size_t n) {
  if (write(fd, p, n) != static_cast<ssize_t>(n)) std::exit(3);
}
static void receive(int fd, void* p, size_t n) {
  if (read(fd, p, n) != static_cast<ssize_t>(n)) std::exit(3);
}

int main() {
  int to_child[2], to_parent[2];
  if (pipe(to_child) || pipe(to_parent)) return 2;
  const pid_t child = fork();
  if (child == 0) {
    cudaIpcMemHandle_t handle;
    receive(to_child[0], &handle, sizeof handle);
    int* shared = nullptr;
    CHECK(cudaIpcOpenMemHandle(reinterpret_cast<void**>(&shared), handle, cudaIpcMemLazyEnablePeerAccess));  // @open
    touch<<<1, 32>>>(shared);
    CHECK(cudaDeviceSynchronize());
    const char opened = 'o';
    send(to_parent[1], &opened, 1);
    char freed;
    receive(to_child[0], &freed, 1);  // the parent has freed it: the mapping is still open here
    return 0;                         // never cudaIpcCloseMemHandle
  }
  int* buffer = nullptr;
  CHECK(cudaMalloc(&buffer, 4096));
  CHECK(cudaMemset(buffer, 0, 4096));
  cudaIpcMemHandle_t handle;
  CHECK(cudaIpcGetMemHandle(&handle, buffer));
  send(to_child[1], &handle, sizeof handle);
  char opened;
  receive(to_parent[0], &opened, 1);
  CHECK(cudaFree(buffer));  // @free-shared
  const char freed = 'f';
  send(to_child[1], &freed, 1);
  int status = 0;
  waitpid(child, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}
