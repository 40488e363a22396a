// The trace's records of a --device-heap run (trace_format.h): the launches of kernels whose
// module calls device-side malloc or free, and each such call the GPU made (device_heap_buffer.h).
// Written by the injection's Sanitizer API subscriber; judged by tool/checks/device_heap_findings.
#pragma once

#include <cstdint>

#include "trace_framing.h"

namespace cuaudit::trace {

// A launch of a kernel whose module was patched; followed by name_bytes of its name (mangled for
// C++ kernels). A call's pc within [function_pc, function_pc + function_bytes) lies in this kernel.
struct DeviceHeapLaunchRecord {
  RecordHeader header;
  uint64_t launch_id;  // from 1, in launch order; DeviceHeapCallRecord::launch_id refers to it
  uint64_t time_ns;
  uint64_t stack_id;  // the host stack of the launch
  uint64_t function_pc;
  uint64_t function_bytes;  // 0: the Sanitizer API did not say where the kernel's code is
  uint64_t heap_bytes;      // the device heap's size then (cudaLimitMallocHeapSize); 0: not known
  uint32_t grid[3];
  uint32_t block[3];
  uint32_t tid;
  int32_t device;
  uint32_t name_bytes;
  uint32_t reserved;
};

enum class DeviceHeapCall : uint8_t { Malloc = 1, Free = 2 };

// One device-side malloc or free, in the order the GPU's threads made them.
struct DeviceHeapCallRecord {
  RecordHeader header;
  uint64_t launch_id;
  uint64_t pc;
  uint64_t address;  // malloc: what it returned (0: the heap was exhausted); free: what it was given
  uint64_t bytes;    // malloc: the size asked for
  uint8_t kind;      // DeviceHeapCall
  uint8_t reserved[7];
};

}  // namespace cuaudit::trace
