// cuaudit's recording paths timed on the CPU, without CUDA (docs/PERFORMANCE.md, "The recording
// paths on the CPU"): the real recorder (call_recorder, stack_capture, pool_recorder, the trace
// writer) driven the way the CUPTI and NVTX layers drive it, from stacks of a chosen depth. Each
// row runs in alternating rounds; it prints the median nanoseconds per event and the spread (the
// lowest and highest round). Under callgrind (run_cpu_bench.sh) each row is also counted in
// instructions, which do not drift with the machine's load.
// Usage: bench_record_paths [ROUNDS] [EVENTS_PER_ROUND]
// BENCH_STATS=1: also count as CUAUDIT_STATS=1 does (the stages' timers cost time of their own)
// and print the stack walks' figures at the end.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "alternating_rounds.h"
#include "call_recorder.h"
#include "cfi_unwinder.h"
#include "pool_recorder.h"
#include "stack_capture.h"
#include "stack_sampling.h"
#include "stage_stats.h"
#include "trace_writer.h"

using namespace cuaudit;
using namespace cuaudit::inject;
using cuaudit::bench::at_depth;
using cuaudit::bench::Row;

namespace {

// One allocation and its release, as the CUPTI layer reports cudaMalloc and cudaFree.
void alloc_release_pairs(uint64_t pairs, uint64_t base) {
  for (uint64_t i = 0; i < pairs; ++i) {
    const uint64_t key = base + (i << 12);
    on_call_enter(Api::cudaMalloc);
    ApiCall alloc{Api::cudaMalloc};
    alloc.key = key, alloc.bytes = 4096, alloc.device = 0;
    on_call_exit(alloc);
    on_call_enter(Api::cudaFree);
    ApiCall release{Api::cudaFree};
    release.key = key, release.device = 0;
    on_call_exit(release);
  }
}

// One block handed out by an NVTX-annotated pool and taken back, as nvtx_memory.cpp records them.
void pool_block_pairs(uint32_t pool, uint64_t pairs, uint64_t base) {
  for (uint64_t i = 0; i < pairs; ++i) {
    const uint64_t key = base + ((i & 1023) << 8);
    record_pool_block(Api::nvtxMemRegionsRegister, pool, key, 256, 0, pool_block_stack(true, 256));
    record_pool_block(Api::nvtxMemRegionsUnregister, 0, key, 0, 0, pool_block_stack(false, 0));
  }
}

// Blocks of 4 to 244 KiB, 64 live, each taken back and its slot handed out again at another size:
// bench/pool_blocks.cu's pattern (its first-fit pool reuses the same places), most blocks across
// the 64 KiB regions the launch checks keep returned blocks by.
void mixed_pool_block_pairs(uint32_t pool, uint64_t pairs, uint64_t base) {
  for (uint64_t i = 0; i < pairs; ++i) {
    const uint64_t key = base + (i % 64) * (256 << 10);
    record_pool_block(Api::nvtxMemRegionsUnregister, 0, key, 0, 0, pool_block_stack(false, 0));
    const uint64_t bytes = ((i * 7919) % 61 + 1) * 4096;
    record_pool_block(Api::nvtxMemRegionsRegister, pool, key, bytes, 0, pool_block_stack(true, bytes));
  }
}

// `work` as --mode watch records it: stacks of a sample of the allocations (the default 512 KiB
// between samples, 1 MiB and more always), launch checks off (no NVTX block tracking for them).
std::function<void(uint64_t)> in_watch_mode(std::function<void(uint64_t)> work) {
  return [work](uint64_t n) {
    configure_stack_sampling(512 << 10, 1 << 20);
    set_pool_blocks_tracked_for_launches(false);
    work(n);
    set_pool_blocks_tracked_for_launches(true);
    configure_stack_sampling(0, 0);
  };
}

}  // namespace

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? std::max(1, atoi(argv[1])) : 7;
  const uint64_t pairs = argc > 2 ? std::max(1ull, strtoull(argv[2], nullptr, 10)) : 200000;
  if (!cuaudit::bench::open_bench_trace("bench_record_paths")) return 1;
  const uint32_t pool = register_pool(MemorySource::NvtxHeap, "bench", 0x7e0000000000, 64 << 20, 0, 0);
  std::vector<Row> rows;
  for (int depth : {10, 20, 40}) {
    rows.push_back({"allocation + release, " + std::to_string(depth) + " frames",
                    [depth](uint64_t n) { at_depth(depth, [n] { alloc_release_pairs(n, 0x7f0000000000); }); },
                    {}});
  }
  // The pairs shared by 8 threads: the figure is the process's wall time per pair, all threads together.
  rows.push_back({"allocation + release, 20 frames, 8 threads sharing them",
                  [](uint64_t n) {
                    std::vector<std::thread> threads;
                    for (uint64_t t = 0; t < 8; ++t)
                      threads.emplace_back([n, t] {
                        CALLGRIND_TOGGLE_COLLECT;  // callgrind's collection state is each thread's own
                        at_depth(20, [n, t] { alloc_release_pairs(n / 8, (t + 1) << 40); });
                        CALLGRIND_TOGGLE_COLLECT;
                      });
                    for (std::thread& t : threads) t.join();
                  },
                  {}});
  rows.push_back({"NVTX pool block handed out + taken back, 20 frames",
                  [pool](uint64_t n) { at_depth(20, [pool, n] { pool_block_pairs(pool, n, 0x7e0000000000); }); },
                  {}});
  rows.push_back({"NVTX pool blocks of 4-244 KiB, 64 live, 20 frames",
                  [pool](uint64_t n) { at_depth(20, [pool, n] { mixed_pool_block_pairs(pool, n, 0x7d0000000000); }); },
                  {}});
  // Watch mode's rows: the same work, 4 KiB allocations and 256-byte blocks sampled about once in
  // 128 and 2,048 events.
  rows.push_back({"watch mode: allocation + release, 20 frames",
                  in_watch_mode([](uint64_t n) { at_depth(20, [n] { alloc_release_pairs(n, 0x7f0000000000); }); }),
                  {}});
  rows.push_back(
      {"watch mode: NVTX pool block handed out + taken back, 20 frames",
       in_watch_mode([pool](uint64_t n) { at_depth(20, [pool, n] { pool_block_pairs(pool, n, 0x7e0000000000); }); }),
       {}});
  const char* stats = getenv("BENCH_STATS");
  const bool counting = stats && std::string(stats) == "1";
  if (counting) start_stage_stats();
  cuaudit::bench::run_alternating(rows, rounds, pairs, "pairs", "pair (2 events)");
  if (counting) log_unwind_stats(), log_stage_stats();
  return 0;
}
