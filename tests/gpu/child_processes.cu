// A parent that runs itself as a child (fork + exec) and forks once without exec: each process's
// leak is attributed to that process; the forked copy starts with an empty history of its own.
// EXPECT: leak api=cudaMalloc bytes=1000 count=1 at=@parent-leak process=main
// EXPECT: leak api=cudaMalloc bytes=2000 count=1 at=@child-leak process=child
// EXPECT-PROCESSES: 3
// EXPECT-EXIT: 0
#include <cuda_runtime.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cstring>

int main(int argc, char** argv) {
  void* p = nullptr;
  if (argc > 1 && std::strcmp(argv[1], "child") == 0) {
    return cudaMalloc(&p, 2000) == cudaSuccess ? 0 : 1;  // @child-leak
  }
  if (cudaMalloc(&p, 1000) != cudaSuccess) return 1;  // @parent-leak
  if (pid_t child = fork(); child == 0) {
    execl("/proc/self/exe", argv[0], "child", static_cast<char*>(nullptr));
    _exit(127);
  } else {
    int status = 0;
    waitpid(child, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return 1;
  }
  if (pid_t copy = fork(); copy == 0) {
    _exit(0);  // a forked copy that never execs: the parent's allocations are not its own
  } else {
    waitpid(copy, nullptr, 0);
  }
  return 0;
}
