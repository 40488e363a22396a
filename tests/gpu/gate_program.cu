// The CI gate's program: leaks at two sites, and a third with --new-leak. check_gate.py runs it
// with a suppression file and against a baseline of its first run.
// EXPECT: leak api=cudaMalloc bytes=4096 count=1 at=@cache
// EXPECT: leak api=cudaMalloc bytes=1024 count=1 at=@scratch
// EXPECT-EXIT: 0
#include <cstring>

#include "cuda_check.h"

__attribute__((noinline)) static void* cache_buffer() {
  void* p = nullptr;
  CHECK(cudaMalloc(&p, 4096));  // @cache
  return p;
}

__attribute__((noinline)) static void scratch() {
  void* p = nullptr;
  CHECK(cudaMalloc(&p, 1024));  // @scratch
}

__attribute__((noinline)) static void added_later() {
  void* p = nullptr;
  CHECK(cudaMalloc(&p, 512));  // @added
}

int main(int argc, char** argv) {
  cache_buffer();
  scratch();
  if (argc > 1 && std::strcmp(argv[1], "--new-leak") == 0) added_later();
  return 0;
}
