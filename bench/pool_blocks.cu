// Blocks of mixed sizes from the example first-fit pool (examples/first_fit_pool.h), annotated with
// NVTX: what a pool's annotations cost under cuaudit (a region registered and one unregistered per
// pair), and what the memory samples add (bench/run_bench.sh's nosample configuration: the pools'
// series and the fragmentation check are computed from them in the tool, not in the program).
// Usage: bench_pool_blocks [PAIRS]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "first_fit_pool.h"
#include "max_rss.h"

int main(int argc, char** argv) {
  const int pairs = argc > 1 ? std::atoi(argv[1]) : 200000;
  FirstFitPool pool("bench", 256 << 20);
  std::vector<void*> live(64, nullptr);  // 64 blocks live at a time, each replaced in turn
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < pairs; ++i) {
    void*& slot = live[static_cast<size_t>(i) % live.size()];
    pool.dealloc(slot);
    slot = pool.alloc(static_cast<size_t>((i * 7919) % 61 + 1) * 4096);  // 4 KiB to 244 KiB
  }
  const double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count() / pairs;
  for (void* p : live) pool.dealloc(p);
  std::printf("pool_blocks: %d pairs from an NVTX-annotated first-fit pool, %.3f us per pair\n", pairs, us);
  print_max_rss();
  return 0;
}
