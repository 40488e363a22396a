#include "device_heap_calls.h"

#include <cstring>

#include "stack_capture.h"
#include "trace_writer.h"

namespace cuaudit::inject {

void record_device_heap_launch(const DeviceHeapLaunch& launch) noexcept {
  trace::DeviceHeapLaunchRecord r{};
  r.launch_id = launch.launch_id;
  r.time_ns = monotonic_ns();
  r.stack_id = capture_stack();
  r.function_pc = launch.function_pc;
  r.function_bytes = launch.function_bytes;
  r.heap_bytes = launch.heap_bytes;
  memcpy(r.grid, launch.grid, sizeof r.grid);
  memcpy(r.block, launch.block, sizeof r.block);
  r.tid = current_tid();
  r.device = launch.device;
  const size_t name_bytes = launch.name ? strnlen(launch.name, 4096) : 0;
  r.name_bytes = static_cast<uint32_t>(name_bytes);
  trace_writer().append_with_tail(r, launch.name, name_bytes);
}

void DeviceHeapDrain::drain() noexcept {
  if (!buffer_ || busy_.test_and_set(std::memory_order_acquire)) return;
  const volatile device_heap::Buffer* buffer = buffer_;
  uint64_t reserved = buffer->reserved;
  if (reserved > buffer->capacity) reserved = buffer->capacity;
  uint64_t i = next_.load(std::memory_order_relaxed);
  for (; i < reserved; ++i) {
    const volatile device_heap::Call& call = buffer->calls[i];
    const uint64_t word = call.launch_and_kind;
    if (word == 0) break;  // reserved, not yet written: a kernel still running
    std::atomic_thread_fence(std::memory_order_acquire);
    trace::DeviceHeapCallRecord r{};
    r.launch_id = device_heap::launch_of(word);
    r.kind = static_cast<uint8_t>(device_heap::kind_of(word));
    r.pc = call.pc;
    r.address = call.address;
    r.bytes = call.bytes;
    trace_writer().append(r);
  }
  next_.store(i, std::memory_order_relaxed);
  busy_.clear(std::memory_order_release);
}

uint64_t DeviceHeapDrain::dropped() const noexcept {
  if (!buffer_) return 0;
  const uint64_t reserved = const_cast<const volatile device_heap::Buffer*>(buffer_)->reserved;
  return reserved > buffer_->capacity ? reserved - buffer_->capacity : 0;
}

}  // namespace cuaudit::inject
