// What bench_launch_checks and its stand-in driver share: a kernel handle is a pointer to its
// parameter layout, and the device memory is one segment, as PyTorch's caching allocator holds it.
#pragma once

#include <cstddef>
#include <cstdint>

namespace cuaudit::bench {

constexpr uint64_t kSegmentStart = 0x7f2000000000;
constexpr uint64_t kSegmentBytes = uint64_t{2} << 30;

struct StandInKernel {
  const char* name;  // mangled, as CUPTI's symbolName gives it
  size_t param_count;
  size_t offsets[8], sizes[8];
};

}  // namespace cuaudit::bench
