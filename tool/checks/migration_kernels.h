// Which kernels pulled managed memory onto a device (docs/RESOURCES.md, "Managed memory that
// migrates"): CUPTI's unified-memory records name no kernel, so a GPU page fault, and a transfer to
// a device that a fault caused, is the kernel's that was running on that device at that moment
// (ProcessTrace::kernel_spans, recorded once the program has managed memory). Where kernels of
// several streams ran at once, each of them is named.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "trace_model.h"

namespace cuaudit {

// What one kernel did to one managed allocation.
struct KernelMigrations {
  uint64_t gpu_faults = 0;
  uint64_t to_device = 0;           // bytes the driver moved to the device for it
  std::unordered_set<size_t> runs;  // the spans (ProcessTrace::kernel_spans index) that faulted
};

// The kernel runs of a process, searchable by device and moment.
class KernelRuns {
 public:
  explicit KernelRuns(const std::vector<KernelSpan>& spans);
  bool empty() const { return spans_.empty(); }
  // The runs on `device` at `time` (indices into the spans given), at most a few dozen.
  std::vector<size_t> running_at(uint32_t device, uint64_t time) const;

 private:
  struct DeviceRuns {
    std::vector<size_t> order;         // indices into the spans, sorted by start
    std::vector<uint64_t> latest_end;  // the latest end among the first i of `order`
  };
  const std::vector<KernelSpan>& spans_;
  std::unordered_map<uint32_t, DeviceRuns> by_device_;
};

// Adds what `m` says of the kernels running when it happened to `kernels` (kernel id -> tally):
// GPU page faults and transfers to a device that the program did not ask for (a prefetch is no
// kernel's doing).
void add_kernel_migration(const KernelRuns& runs, const std::vector<KernelSpan>& spans, const ManagedMigration& m,
                          std::unordered_map<uint32_t, KernelMigrations>& kernels);

// "`touch(float*, int)`: 1,024 GPU page fault(s), 64.0 MiB to the device, in 10 run(s)", the
// kernels with the most faults first, at most `most` of them and how many more.
std::string describe_kernel_migrations(const std::unordered_map<uint32_t, KernelMigrations>& kernels,
                                       const std::unordered_map<uint32_t, std::string>& names, size_t most = 3);

}  // namespace cuaudit
