// Stream-ordered pool memory shared with another process, done right: the parent exports its pool
// (a POSIX file descriptor, passed over a UNIX socket) and one pointer of it; the child imports
// both, uses the memory, frees its imported pointer (cudaFree) and says so; only then does the
// parent free the memory and destroy its pool. No findings in either process.
// EXPECT-PROCESSES: 2
// EXPECT-EXIT: 0
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>

#include "cuda_check.h"

__global__ void touch(int* data) { data[threadIdx.x] += 1; }

// One byte carrying one file descriptor (SCM_RIGHTS) over a UNIX socket.
struct FdMessage {
  char byte = 0;
  iovec iov{&byte, 1};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  msghdr msg{};
  FdMessage() {
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control;
    msg.msg_controllen = sizeof control;
  }
};

static void send_fd(int socket, int fd) {
  FdMessage m;
  cmsghdr* c = CMSG_FIRSTHDR(&m.msg);
  c->cmsg_level = SOL_SOCKET;
  c->cmsg_type = SCM_RIGHTS;
  c->cmsg_len = CMSG_LEN(sizeof(int));
  memcpy(CMSG_DATA(c), &fd, sizeof fd);
  if (sendmsg(socket, &m.msg, 0) != 1) std::exit(3);
}

static int receive_fd(int socket) {
  FdMessage m;
  if (recvmsg(socket, &m.msg, 0) != 1) std::exit(3);
  int fd = -1;
  memcpy(&fd, CMSG_DATA(CMSG_FIRSTHDR(&m.msg)), sizeof fd);
  return fd;
}

static void send(int fd, const void* p, size_t n) {
  if (write(fd, p, n) != static_cast<ssize_t>(n)) std::exit(3);
}
static void receive(int fd, void* p, size_t n) {
  if (read(fd, p, n) != static_cast<ssize_t>(n)) std::exit(3);
}

int main() {
  int sockets[2];
  if (socketpair(AF_UNIX, SOCK_STREAM, 0, sockets)) return 2;
  const pid_t child = fork();
  if (child == 0) {
    const int fd = receive_fd(sockets[1]);
    cudaMemPool_t pool;
    CHECK(cudaMemPoolImportFromShareableHandle(&pool, reinterpret_cast<void*>(static_cast<intptr_t>(fd)),
                                               cudaMemHandleTypePosixFileDescriptor, 0));
    cudaMemPoolPtrExportData data;
    receive(sockets[1], &data, sizeof data);
    int* shared = nullptr;
    CHECK(cudaMemPoolImportPointer(reinterpret_cast<void**>(&shared), pool, &data));
    touch<<<1, 32>>>(shared);
    CHECK(cudaDeviceSynchronize());
    CHECK(cudaFree(shared));
    const char done = 'd';
    send(sockets[1], &done, 1);
    close(fd);
    return 0;
  }
  cudaMemPoolProps props{};
  props.allocType = cudaMemAllocationTypePinned;
  props.handleTypes = cudaMemHandleTypePosixFileDescriptor;
  props.location.type = cudaMemLocationTypeDevice;
  props.location.id = 0;
  cudaMemPool_t pool;
  CHECK(cudaMemPoolCreate(&pool, &props));
  int fd = -1;
  CHECK(cudaMemPoolExportToShareableHandle(&fd, pool, cudaMemHandleTypePosixFileDescriptor, 0));
  send_fd(sockets[0], fd);
  cudaStream_t stream;
  CHECK(cudaStreamCreate(&stream));
  int* buffer = nullptr;
  CHECK(cudaMallocFromPoolAsync(reinterpret_cast<void**>(&buffer), 4096, pool, stream));
  CHECK(cudaMemsetAsync(buffer, 0, 4096, stream));
  CHECK(cudaStreamSynchronize(stream));
  cudaMemPoolPtrExportData data;
  CHECK(cudaMemPoolExportPointer(&data, buffer));
  send(sockets[0], &data, sizeof data);
  char done;
  receive(sockets[0], &done, 1);
  CHECK(cudaFreeAsync(buffer, stream));
  CHECK(cudaStreamSynchronize(stream));
  CHECK(cudaStreamDestroy(stream));
  CHECK(cudaMemPoolDestroy(pool));
  close(fd);
  int status = 0;
  waitpid(child, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}
