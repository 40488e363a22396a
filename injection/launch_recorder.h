// Writes what the launch checks found: a kernel's name once, then each parameter that failed a
// check, with the launch's stack. Knows nothing of CUDA (the unit tests call it directly).
#pragma once

#include <cstdint>

#include "trace_format.h"

namespace cuaudit::inject {

// Before a kernel's first LaunchParam record: its id and name (may be null: "?").
// A new kernel id for this process (from 1): the launch checks and the kernel spans share one numbering.
uint32_t allocate_kernel_id() noexcept;
void record_kernel(uint32_t kernel_id, const char* name) noexcept;

struct LaunchFact {
  uint32_t kernel_id = 0;
  uint16_t param_index = 0;
  trace::LaunchProblem problem = trace::LaunchProblem::Misaligned;
  trace::LaunchPath path = trace::LaunchPath::cudaLaunchKernel;
  uint64_t value = 0;
  uint32_t alignment = 0;
  int32_t driver_result = 0;
  uint8_t memory_type = 0;
  bool host_readable = false;
  int8_t pointer_device = -1;  // PeerNotEnabled
  int8_t launch_device = -1;
};

// Captures the calling thread's stack and writes the fact.
void record_launch_param(const LaunchFact& fact) noexcept;

// A word of a kernel's parameters that may be a pointer and is not 16-byte aligned (problem 0),
// or points to no memory the driver knows (host memory among it), or into a block a pool took back.
struct LaunchBitsFact {
  uint32_t kernel_id = 0;
  uint16_t param_index = 0;
  uint16_t member_offset = 0;
  uint32_t buffer_offset = 0;
  trace::LaunchPath path = trace::LaunchPath::cudaLaunchKernel;
  uint64_t value = 0;
  uint64_t stack_id = 0;  // the launch's stack (capture_stack)
  uint8_t problem = 0;    // 0, or LaunchProblem::NotAccessible or ReturnedToPool
  int32_t driver_result = 0;
  uint8_t memory_type = 0;
  bool host_readable = false;
};

// Writes the fact.
void record_launch_bits(const LaunchBitsFact& fact) noexcept;

}  // namespace cuaudit::inject
