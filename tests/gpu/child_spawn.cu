// Children started with posix_spawn, system() and Python's subprocess are tracked: each one's
// leak is its own, and the report has a section per process that used CUDA (the shell that
// system() starts and the Python interpreter do not use CUDA and leave no trace).
// EXPECT: leak api=cudaMalloc bytes=100 count=1 at=@parent-leak process=main
// EXPECT: leak api=cudaMalloc bytes=200 count=1 at=@spawned-leak process=child
// EXPECT: leak api=cudaMalloc bytes=300 count=1 at=@system-leak process=child
// EXPECT: leak api=cudaMalloc bytes=400 count=1 at=@python-leak process=child
// EXPECT-PROCESSES: 4
// EXPECT-EXIT: 0
#include <cuda_runtime.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

extern char** environ;

int main(int argc, char** argv) {
  void* p = nullptr;
  const std::string mode = argc > 1 ? argv[1] : "";
  if (mode == "spawned") return cudaMalloc(&p, 200) == cudaSuccess ? 0 : 1;  // @spawned-leak
  if (mode == "system") return cudaMalloc(&p, 300) == cudaSuccess ? 0 : 1;   // @system-leak
  if (mode == "python") return cudaMalloc(&p, 400) == cudaSuccess ? 0 : 1;   // @python-leak
  if (cudaMalloc(&p, 100) != cudaSuccess) return 1;                          // @parent-leak
  char self[4096];
  const ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  if (n <= 0) return 1;
  self[n] = '\0';

  pid_t pid;
  char* spawn_argv[] = {self, const_cast<char*>("spawned"), nullptr};
  if (posix_spawn(&pid, self, nullptr, nullptr, spawn_argv, environ) != 0) return 1;
  int status = 0;
  waitpid(pid, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return 1;

  if (std::system((std::string("'") + self + "' system").c_str()) != 0) return 1;

  const std::string python = std::string("python3 -c \"import subprocess, sys; sys.exit(subprocess.run(['") + self +
                             "', 'python']).returncode)\"";
  if (std::system(python.c_str()) != 0) return 1;
  return 0;
}
