#include "launch_recorder.h"

#include <atomic>
#include <cstring>

#include "call_recorder.h"
#include "stack_capture.h"
#include "trace_writer.h"

namespace cuaudit::inject {
namespace {

std::atomic<uint64_t> g_allocation_epoch{0};
std::atomic<uint64_t> g_release_epoch{0};
std::atomic<uint64_t> g_launches{0};
thread_local uint32_t tls_unpublished_launches = 0;

}  // namespace

void record_kernel(uint32_t kernel_id, const char* name) noexcept {
  trace::KernelRecord r{};
  if (!name) name = "?";
  const size_t name_bytes = strnlen(name, trace::kMaxRecordBytes - sizeof r);
  r.kernel_id = kernel_id;
  r.name_bytes = static_cast<uint32_t>(name_bytes);
  trace_writer().append_with_tail(r, name, name_bytes);
}

void record_launch_param(const LaunchFact& f) noexcept {
  trace::LaunchParamRecord r{};
  r.stack_id = capture_stack();
  r.seq = next_sequence();
  r.time_ns = monotonic_ns();
  r.value = f.value;
  r.tid = current_tid();
  r.kernel_id = f.kernel_id;
  r.alignment = f.alignment;
  r.param_index = f.param_index;
  r.problem = static_cast<uint8_t>(f.problem);
  r.path = static_cast<uint8_t>(f.path);
  r.driver_result = f.driver_result;
  r.memory_type = f.memory_type;
  r.host_readable = f.host_readable ? 1 : 0;
  trace_writer().append(r);
}

void note_launch() noexcept {
  if (++tls_unpublished_launches == 64) {
    g_launches.fetch_add(64, std::memory_order_relaxed);
    tls_unpublished_launches = 0;
  }
}

uint64_t launches_so_far() noexcept { return g_launches.load(std::memory_order_relaxed); }

uint64_t allocation_epoch() noexcept { return g_allocation_epoch.load(std::memory_order_acquire); }
uint64_t release_epoch() noexcept { return g_release_epoch.load(std::memory_order_acquire); }
void note_allocation() noexcept { g_allocation_epoch.fetch_add(1, std::memory_order_acq_rel); }
void note_release() noexcept { g_release_epoch.fetch_add(1, std::memory_order_acq_rel); }

}  // namespace cuaudit::inject
