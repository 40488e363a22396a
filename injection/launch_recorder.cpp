#include "launch_recorder.h"

#include <atomic>
#include <cstring>

#include "event_clock.h"
#include "stack_capture.h"
#include "trace_writer.h"

namespace cuaudit::inject {
namespace {
std::atomic<uint32_t> g_next_kernel_id{1};
}  // namespace

uint32_t allocate_kernel_id() noexcept { return g_next_kernel_id.fetch_add(1, std::memory_order_relaxed); }

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
  r.pointer_device = f.pointer_device;
  r.launch_device = f.launch_device;
  trace_writer().append(r);
}

void record_launch_bits(const LaunchBitsFact& f) noexcept {
  trace::LaunchBitsRecord r{};
  r.stack_id = f.stack_id;
  r.seq = next_sequence();
  r.time_ns = monotonic_ns();
  r.value = f.value;
  r.tid = current_tid();
  r.kernel_id = f.kernel_id;
  r.buffer_offset = f.buffer_offset;
  r.param_index = f.param_index;
  r.member_offset = f.member_offset;
  r.path = static_cast<uint8_t>(f.path);
  r.problem = f.problem;
  r.memory_type = f.memory_type;
  r.host_readable = f.host_readable ? 1 : 0;
  r.driver_result = f.driver_result;
  trace_writer().append(r);
}

}  // namespace cuaudit::inject
