#include "stack_sampling.h"

#include <atomic>
#include <cmath>

#include "event_clock.h"
#include "trace_writer.h"

namespace cuaudit::inject {
namespace {

std::atomic<uint64_t> g_mean_bytes{0};
std::atomic<uint64_t> g_exact_bytes{UINT64_MAX};
std::atomic<uint64_t> g_seed_counter{0};

// Each thread's countdown, and its own generator (xorshift64*: no lock, no allocation).
struct Countdown {
  bool ready = false;
  uint64_t state = 0;
  double bytes_left = 0;
};
thread_local Countdown tls_countdown;

uint64_t next_random(uint64_t& state) noexcept {
  state ^= state >> 12;
  state ^= state << 25;
  state ^= state >> 27;
  return state * 0x2545F4914F6CDD1Dull;
}

// An exponentially distributed number of bytes with mean `mean`: -mean * ln(u), u uniform in (0, 1].
double draw_interval(uint64_t& state, uint64_t mean) noexcept {
  const double u = static_cast<double>((next_random(state) >> 11) + 1) * 0x1.0p-53;
  return -std::log(u) * static_cast<double>(mean);
}

}  // namespace

void configure_stack_sampling(uint64_t mean_bytes, uint64_t exact_bytes) noexcept {
  g_exact_bytes.store(exact_bytes ? exact_bytes : UINT64_MAX, std::memory_order_relaxed);
  g_mean_bytes.store(mean_bytes, std::memory_order_release);
}

bool stacks_sampled() noexcept { return g_mean_bytes.load(std::memory_order_relaxed) != 0; }

bool take_allocation_stack(uint64_t bytes, int32_t result) noexcept {
  const uint64_t mean = g_mean_bytes.load(std::memory_order_relaxed);
  if (mean == 0 || result != 0 || bytes >= g_exact_bytes.load(std::memory_order_relaxed)) return true;
  Countdown& c = tls_countdown;
  if (!c.ready) {
    // Threads seeded apart: their thread id, a counter and the clock, mixed.
    c.state = (uint64_t{current_tid()} << 32) ^ monotonic_ns() ^
              (g_seed_counter.fetch_add(1, std::memory_order_relaxed) + 1) * 0x9E3779B97F4A7C15ull;
    if (c.state == 0) c.state = 0x9E3779B97F4A7C15ull;
    c.bytes_left = draw_interval(c.state, mean);
    c.ready = true;
  }
  if (static_cast<double>(bytes) < c.bytes_left) {
    c.bytes_left -= static_cast<double>(bytes);  // memoryless: what is left is again exponential
    return false;
  }
  c.bytes_left = draw_interval(c.state, mean);
  return true;
}

bool take_release_stack(int32_t result) noexcept { return result != 0 || !stacks_sampled(); }

void record_stack_sampling() noexcept {
  const uint64_t mean = g_mean_bytes.load(std::memory_order_relaxed);
  if (mean == 0) return;
  trace::StackSamplingRecord r{};
  r.mean_bytes = mean;
  const uint64_t exact = g_exact_bytes.load(std::memory_order_relaxed);
  r.exact_bytes = exact == UINT64_MAX ? 0 : exact;
  trace_writer().append(r);
}

}  // namespace cuaudit::inject
