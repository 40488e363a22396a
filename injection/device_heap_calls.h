// The recorder's side of a --device-heap run, without the Sanitizer API: a patched kernel's launch
// and the calls its threads left in a context's buffer (device_heap_buffer.h) become trace records.
// The subscriber (sanitizer_subscriber.cpp) calls in here; the unit tests do the same.
#pragma once

#include <atomic>
#include <cstdint>

#include "device_heap_buffer.h"

namespace cuaudit::inject {

struct DeviceHeapLaunch {
  uint64_t launch_id = 0;
  uint64_t function_pc = 0, function_bytes = 0;
  uint64_t heap_bytes = 0;
  uint32_t grid[3] = {1, 1, 1}, block[3] = {1, 1, 1};
  int32_t device = -1;
  const char* name = nullptr;
};

// Writes the launch with the calling thread's stack (the host code that launched it).
void record_device_heap_launch(const DeviceHeapLaunch& launch) noexcept;

// Reads one context's buffer from where it stopped last time: each whole call becomes a record;
// the first call not yet whole (a kernel still running) ends this pass. Callers on several
// threads (synchronizations, exit) are fine: one drains at a time, the others return at once.
class DeviceHeapDrain {
 public:
  explicit DeviceHeapDrain(device_heap::Buffer* buffer) noexcept : buffer_(buffer) {}
  void drain() noexcept;
  // Calls reserved beyond the buffer's capacity: never recorded (said in a notice at exit).
  uint64_t dropped() const noexcept;
  uint64_t recorded() const noexcept { return next_.load(std::memory_order_relaxed); }

 private:
  device_heap::Buffer* buffer_;
  std::atomic<uint64_t> next_{0};
  std::atomic_flag busy_ = ATOMIC_FLAG_INIT;
};

}  // namespace cuaudit::inject
