// Host malloc + free pairs from a stack of a chosen depth, with no cuaudit in the process: the
// program the peers' rows of bench/cpu/run_cpu_bench.sh time under heaptrack and LeakSanitizer
// (this file built again with -fsanitize=leak), beside cuaudit's recorder rows on the same shapes.
// Usage: bench_host_pairs DEPTH PAIRS   (prints "host_pairs: DEPTH frames, N ns per pair")
#include <chrono>
#include <cstdio>
#include <cstdlib>

namespace {

volatile unsigned char g_sink;
// Called through volatile pointers: the compiler may not pair a malloc with its free and drop both.
void* (*volatile g_malloc)(size_t) = malloc;
void (*volatile g_free)(void*) = free;

__attribute__((noinline)) void pairs_at_depth(int depth, long pairs) {
  if (depth > 1) {
    pairs_at_depth(depth - 1, pairs);
    asm volatile("" ::: "memory");  // not a tail call: every frame stays on the stack
    return;
  }
  for (long i = 0; i < pairs; ++i) {
    auto* p = static_cast<unsigned char*>(g_malloc(4096));
    p[0] = static_cast<unsigned char>(i);
    g_sink = p[0];
    g_free(p);
  }
}

}  // namespace

int main(int argc, char** argv) {
  const int depth = argc > 1 ? atoi(argv[1]) : 20;
  const long pairs = argc > 2 ? atol(argv[2]) : 1000000;
  pairs_at_depth(depth, pairs / 10);  // warm: the allocator's and the tool's caches
  const auto start = std::chrono::steady_clock::now();
  pairs_at_depth(depth, pairs);
  const double ns = std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - start).count();
  printf("host_pairs: %d frames, %.1f ns per pair\n", depth, ns / static_cast<double>(pairs));
  return 0;
}
