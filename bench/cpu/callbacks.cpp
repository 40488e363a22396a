// cuaudit's CUPTI callback for the runtime calls it does not record (cudaStreamSynchronize,
// cudaGetLastError, ...), most of the calls a program makes: the real callback (cupti_subscriber.cpp)
// called as CUPTI calls it, at the call's entry and at its exit, with the callback data CUPTI builds.
// No GPU and no driver: a successful call's callbacks read only what CUPTI hands them. The callback
// and the code it runs are built into a library this program loads with dlopen, as the driver loads
// the injection (callbacks_library.cpp): its thread-local state then costs what it costs there.
// Under callgrind (run_cpu_bench.sh) each row is also counted in instructions.
// Usage: bench_callbacks LIBRARY [ROUNDS] [CALLS_PER_ROUND]
#include <cupti.h>
#include <dlfcn.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "alternating_rounds.h"

using cuaudit::bench::Row;

int main(int argc, char** argv) {
  void* library = argc > 1 ? dlopen(argv[1], RTLD_NOW | RTLD_LOCAL) : nullptr;
  using RuntimeCalls = void (*)(CUpti_CallbackId, uint64_t);
  const auto runtime_calls =
      library ? reinterpret_cast<RuntimeCalls>(dlsym(library, "cuaudit_bench_runtime_calls")) : nullptr;
  if (!runtime_calls) {
    fprintf(stderr, "usage: bench_callbacks LIBRARY [ROUNDS] [CALLS] (%s)\n", dlerror());
    return 2;
  }
  const int rounds = argc > 2 ? std::max(1, atoi(argv[2])) : 7;
  const uint64_t calls = argc > 3 ? std::max(1ull, strtoull(argv[3], nullptr, 10)) : 1000000;
  std::vector<Row> rows;
  rows.push_back(
      {"a runtime call not recorded (cudaStreamSynchronize), entry + exit",
       [runtime_calls](uint64_t n) { runtime_calls(CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_v3020, n); },
       {}});
  rows.push_back({"cudaGetLastError (the sticky error read), entry + exit",
                  [runtime_calls](uint64_t n) { runtime_calls(CUPTI_RUNTIME_TRACE_CBID_cudaGetLastError_v3020, n); },
                  {}});
  // An allocation and its release through the whole callback, from 20 frames: what
  // bench_record_paths' "20 frames" row costs inside a dlopened library, thread-locals included.
  using Pairs = void (*)(uint64_t);
  if (const auto pairs = reinterpret_cast<Pairs>(dlsym(library, "cuaudit_bench_alloc_release"))) {
    rows.push_back({"cudaMalloc + cudaFree through the callback, 20 frames (per call: half a pair)",
                    [pairs](uint64_t n) { cuaudit::bench::at_depth(20, [pairs, n] { pairs(n / 2); }); },
                    {}});
  }
  cuaudit::bench::run_alternating(rows, rounds, calls, "calls", "call (its two callbacks)");
  return 0;
}
