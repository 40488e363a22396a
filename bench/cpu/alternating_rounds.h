// What the CPU benchmarks share: a stack of a chosen depth, and rows run in alternating rounds so
// that drift on the machine hits them alike, each round under callgrind's collection toggle and
// dumped by the row's name (run_cpu_bench.sh counts instructions per row from the dumps).
#pragma once

#if __has_include(<valgrind/callgrind.h>)
#include <valgrind/callgrind.h>
#else  // without valgrind's headers: timed only (run_cpu_bench.sh says instructions were not counted)
#define CALLGRIND_TOGGLE_COLLECT
#define CALLGRIND_DUMP_STATS_AT(name) (void)(name)
#endif

#include <stdlib.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "process_record.h"
#include "trace_writer.h"

namespace cuaudit::bench {

// Runs `work` `depth` frames below the caller: the stack the recorder unwinds is that deep.
__attribute__((noinline)) inline void at_depth(int depth, const std::function<void()>& work) {
  if (depth <= 1) {
    work();
  } else {
    at_depth(depth - 1, work);
  }
  asm volatile("" ::: "memory");  // not a tail call: every frame stays on the stack
}

inline double now_ns() {
  return std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// The trace the recorder writes into, in a new directory under /tmp; false (said) when it cannot.
inline bool open_bench_trace(const char* program) {
  char dir[] = "/tmp/cuaudit-bench-XXXXXX", error[256] = "mkdtemp failed";
  if (mkdtemp(dir) && inject::trace_writer().open(dir, error, sizeof error)) {
    inject::write_process_info(100);  // as the injection does first
    return true;
  }
  fprintf(stderr, "%s: cannot open a trace in %s: %s\n", program, dir, error);
  return false;
}

struct Row {
  std::string name;
  std::function<void(uint64_t)> run;  // runs that many of the row's units
  std::vector<double> ns;             // per unit, one per round
};

// Warms every row (a tenth of `count`), runs them `rounds` times in turn, and prints each row's
// median nanoseconds per `unit` with the lowest and highest round. BENCH_ROWS=TEXT keeps the rows
// whose name contains TEXT (one row alone under a profiler).
inline void run_alternating(std::vector<Row>& rows, int rounds, uint64_t count, const char* units, const char* unit) {
  if (const char* only = getenv("BENCH_ROWS"))
    rows.erase(std::remove_if(rows.begin(), rows.end(),
                              [only](const Row& row) { return row.name.find(only) == std::string::npos; }),
               rows.end());
  for (Row& row : rows) row.run(count / 10);  // warm: stacks interned, kernels known, buffers allocated
  for (int r = 0; r < rounds; ++r) {
    for (Row& row : rows) {
      CALLGRIND_TOGGLE_COLLECT;
      const double start = now_ns();
      row.run(count);
      const double elapsed = now_ns() - start;
      CALLGRIND_TOGGLE_COLLECT;
      CALLGRIND_DUMP_STATS_AT(row.name.c_str());
      row.ns.push_back(elapsed / static_cast<double>(count));
      inject::trace_writer().flush_all();  // the writer's own work, outside the timed part
    }
  }
  printf("%d alternating rounds of %llu %s each; ns per %s: median [lowest, highest]\n", rounds,
         static_cast<unsigned long long>(count), units, unit);
  for (Row& row : rows) {
    std::sort(row.ns.begin(), row.ns.end());
    printf("  %-64s %8.1f  [%.1f, %.1f]\n", row.name.c_str(), row.ns[row.ns.size() / 2], row.ns.front(), row.ns.back());
  }
}

}  // namespace cuaudit::bench
