#include "stage_stats.h"

#include <atomic>

#include "in_target_log.h"
#include "trace_writer.h"

namespace cuaudit::inject {
namespace {

struct Counter {
  std::atomic<uint64_t> calls{0};
  std::atomic<uint64_t> cycles{0};
};
Counter g_counters[static_cast<size_t>(Stage::Count)];
const char* const kStageText[] = {
#define CUAUDIT_STAGE_TEXT(id, text) text,
    CUAUDIT_STAGES(CUAUDIT_STAGE_TEXT)
#undef CUAUDIT_STAGE_TEXT
};
uint64_t g_start_cycles = 0;
uint64_t g_start_ns = 0;

}  // namespace

bool g_stage_stats = false;

void add_stage_time(Stage stage, uint64_t cycles) noexcept {
  Counter& c = g_counters[static_cast<size_t>(stage)];
  c.calls.fetch_add(1, std::memory_order_relaxed);
  c.cycles.fetch_add(cycles, std::memory_order_relaxed);
}

void start_stage_stats() noexcept {
  g_start_cycles = stage_clock();
  g_start_ns = monotonic_ns();
  g_stage_stats = g_start_cycles != 0;  // no cycle clock on this machine: nothing to count
}

void log_stage_stats() noexcept {
  if (!g_stage_stats) return;
  const double ns_per_cycle =
      static_cast<double>(monotonic_ns() - g_start_ns) / static_cast<double>(stage_clock() - g_start_cycles);
  log_info("stage times (CUAUDIT_STATS=1; %.3f ns per cycle):", ns_per_cycle);
  for (size_t i = 0; i < static_cast<size_t>(Stage::Count); ++i) {
    const uint64_t calls = g_counters[i].calls.load(), cycles = g_counters[i].cycles.load();
    if (!calls) continue;
    log_info("  %-80s %10llu calls %9.0f ns each %9.1f ms in all", kStageText[i],
             static_cast<unsigned long long>(calls), static_cast<double>(cycles) * ns_per_cycle / calls,
             static_cast<double>(cycles) * ns_per_cycle / 1e6);
  }
}

}  // namespace cuaudit::inject
