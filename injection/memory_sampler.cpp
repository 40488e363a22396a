#include "memory_sampler.h"

#include <sched.h>
#include <time.h>

#include <algorithm>
#include <atomic>

#include "background_thread.h"
#include "call_recorder.h"
#include "device_state.h"
#include "driver_api.h"
#include "in_target_log.h"
#include "trace_writer.h"

namespace cuaudit::inject {
namespace {

// A context the sampler may read. `busy` is set by the sampler while it uses the context;
// destruction clears `context` first and then waits for `busy` to drop (both sequentially
// consistent, so one of the two always sees the other).
struct ContextSlot {
  std::atomic<bool> claimed{false};  // taken by a context, set before device and context
  std::atomic<CUcontext> context{nullptr};
  std::atomic<int32_t> device{-1};
  std::atomic<bool> busy{false};
};
constexpr int kMaxContexts = 64;
ContextSlot g_slots[kMaxContexts];

std::atomic<bool> g_enabled{false};
std::atomic<bool> g_stopping{false};
// Set by program threads after an allocation or release: the sampler takes a round soon after, so
// the timeline follows the program's changes closely without cuMemGetInfo (several microseconds) in
// the program's own thread. "Soon" is within a millisecond in the process's first second and
// stretches with its age (a thousandth of it) up to the sampling interval: a short program's curve
// is sharp, and a service allocating all day is sampled once an interval, not a thousand times a
// second (each sample is a record of the trace and a moment of contention in the driver).
std::atomic<bool> g_change_pending{false};
unsigned g_interval_ms = 10;
// At exit: one more round of every device, so each timeline ends with what was held then (a
// device whose memory was released last would otherwise end at its last sample before that).
std::atomic<bool> g_final_round{false};
std::atomic<bool> g_final_round_done{false};
std::atomic<bool> g_thread_running{false};

// Samples `device` through the calling thread's current context.
bool take_sample(int32_t device) noexcept {
  size_t free_bytes = 0, total_bytes = 0;
  if (driver().mem_get_info(&free_bytes, &total_bytes) != CUDA_SUCCESS) return false;
  record_memory_sample(device, free_bytes, total_bytes);
  return true;
}

// One round: each device once, through the first live context on it.
void sample_all_devices() noexcept {
  uint64_t sampled = 0;  // bit per device ordinal below 64
  for (ContextSlot& slot : g_slots) {
    slot.busy.store(true);
    const CUcontext context = slot.context.load();
    const int32_t device = slot.device.load();
    const uint64_t bit = device >= 0 && device < 64 ? uint64_t{1} << device : 0;
    if (context && !(sampled & bit) && !g_stopping.load()) {
      if (driver().ctx_set_current(context) == CUDA_SUCCESS && take_sample(device)) {
        sampled |= bit;
        record_pool_state(device);  // only once the program uses stream-ordered pools
      } else {
        // Destroyed behind our back (cudaDeviceReset) or CUDA is shutting down: forget it.
        // (The slot stays claimed until its destruction callback, if one ever comes.)
        CUcontext expected = context;
        slot.context.compare_exchange_strong(expected, nullptr);
      }
      driver().ctx_set_current(nullptr);
    }
    slot.busy.store(false);
  }
}

// Wakes every millisecond; takes a round every interval, or sooner when memory changed.
void* sampler_main(void*) {
  const timespec tick{0, 1000000L};
  unsigned since_round_ms = 0;
  uint64_t age_ms = 0;  // since the sampler started (about the process's age)
  while (!g_stopping.load(std::memory_order_relaxed)) {
    nanosleep(&tick, nullptr);
    ++since_round_ms;
    ++age_ms;
    const bool last = g_final_round.load();  // asked for before this round began
    const unsigned change_gap_ms =
        static_cast<unsigned>(std::min<uint64_t>(std::max<uint64_t>(age_ms / 1000, 1), g_interval_ms));
    const bool changed = since_round_ms >= change_gap_ms && g_change_pending.load(std::memory_order_relaxed);
    if (since_round_ms < g_interval_ms && !changed && !last) continue;
    g_change_pending.store(false, std::memory_order_relaxed);
    since_round_ms = 0;
    if (trace_writer().enabled()) sample_all_devices();
    if (last) g_final_round_done.store(true);
  }
  return nullptr;
}

}  // namespace

void start_memory_sampler(unsigned interval_ms) noexcept {
  if (interval_ms == 0 || !driver().mem_get_info || !driver().ctx_set_current) return;
  g_interval_ms = interval_ms;
  g_enabled.store(true);
  if (!start_background_thread(sampler_main)) {
    log_warning("cannot start the memory sampler thread; the timeline has samples at allocations only");
  } else {
    g_thread_running.store(true);
  }
}

void sampler_context_created(CUcontext context, int32_t device) noexcept {
  if (!context) return;
  for (ContextSlot& slot : g_slots) {
    if (slot.claimed.exchange(true)) continue;
    slot.device.store(device);
    slot.context.store(context);
    return;
  }
}

void sampler_context_destroying(CUcontext context) noexcept {
  for (ContextSlot& slot : g_slots) {
    CUcontext expected = context;
    if (!context || !slot.context.compare_exchange_strong(expected, nullptr)) continue;
    while (slot.busy.load()) sched_yield();  // at most one cuMemGetInfo
    slot.claimed.store(false);
  }
}

void sample_after_memory_change(int32_t device) noexcept {
  if (device < 0 || g_change_pending.load(std::memory_order_relaxed)) return;  // a load, mostly: no line bouncing
  g_change_pending.store(true, std::memory_order_relaxed);
}

void sample_at_failed_allocation(int32_t device) noexcept {
  if (g_stopping.load(std::memory_order_relaxed) || device < 0 || !driver().mem_get_info) return;
  take_sample(device);
}

void forget_memory_sampler_in_child() noexcept {
  g_stopping.store(true);
  g_enabled.store(false);
  for (ContextSlot& slot : g_slots) {
    slot.context.store(nullptr);
    slot.busy.store(false);
    slot.claimed.store(false);
  }
}

void stop_memory_sampler() noexcept {
  if (g_thread_running.load() && !g_stopping.load()) {
    g_final_round.store(true);
    // Bounded (200 ms at most): a round takes one cuMemGetInfo per device after the sampler's sleep;
    // with a long --sample-interval the last periodic sample stays the last.
    const timespec millisecond{0, 1000000L};
    const unsigned limit = (g_interval_ms < 100 ? g_interval_ms : 100) + 100;
    for (unsigned waited = 0; !g_final_round_done.load() && waited < limit; ++waited) {
      nanosleep(&millisecond, nullptr);
    }
  }
  g_stopping.store(true);
  // The sample in flight takes one cuMemGetInfo; a sampler stuck in the driver must not hold the
  // exit up for ever (at most about 100 ms per slot, then CUDA's teardown goes on without it).
  for (ContextSlot& slot : g_slots) {
    for (int spins = 0; slot.busy.load() && spins < 100000; ++spins) sched_yield();
  }
}

}  // namespace cuaudit::inject
