// The process's peak resident memory, printed by every benchmark so that bench/run_bench.sh can
// tell what cuaudit adds to a program's memory.
#pragma once
#include <sys/resource.h>

#include <cstdio>

inline void print_max_rss() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  std::printf("max RSS %ld KiB\n", usage.ru_maxrss);
}
