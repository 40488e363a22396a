// Managed memory that migrates back and forth (docs/RESOURCES.md, "Managed memory that migrates"):
// CUPTI's unified-memory records (ProcessTrace::managed_migrations) attributed to the managed
// allocation that held their address at that moment, then judged per allocation. A page counts a
// round trip when it comes back to a device after having gone to the host; a buffer prefetched
// once, or read back once at the end, makes none. `managed_migration` is a warning at the
// allocation's site when some page made at least `min_round_trips` (or the driver reported
// thrashing) and at least `min_bytes` moved both ways together.
#pragma once

#include <cstdint>
#include <unordered_map>
#include <vector>

#include "migration_kernels.h"
#include "replay.h"
#include "report_model.h"
#include "stack_resolver.h"
#include "trace_model.h"

namespace cuaudit {

struct MigrationOptions {
  uint64_t min_bytes = uint64_t(1) << 20;  // moved to the device and to the host together
  uint64_t min_round_trips = 2;            // the most any one page came back to a device
};

// The program's managed allocations over time, as the replay saw them go live and be released.
class ManagedRanges : public ReplayObserver {
 public:
  struct Range {
    uint64_t address = 0, bytes = 0;
    uint64_t from_ns = 0, to_ns = UINT64_MAX;  // live from, until (UINT64_MAX: never released)
    uint64_t stack_id = 0, python_stack_id = 0;
    Api api = Api::Count;
    int32_t device = trace::kUnknownDevice;
  };
  void on_live(const MemoryEvent& allocation) override;
  void on_released(const MemoryEvent& allocation, const MemoryEvent& release) override;
  const std::vector<Range>& ranges() const { return ranges_; }

 private:
  std::vector<Range> ranges_;
  std::unordered_map<uint64_t, size_t> live_;  // address -> its range, while live
};

// What unified memory did to one allocation.
struct MigrationTally {
  uint64_t to_device = 0, to_host = 0, between_devices = 0;  // bytes
  uint64_t cpu_faults = 0, gpu_faults = 0, thrashing = 0, throttling = 0, remote_maps = 0;
  uint64_t round_trips = 0;  // the most any one page (64 KiB unit) came back to a device
  uint64_t records = 0;
  std::unordered_map<uint32_t, KernelMigrations> kernels;  // kernel id -> what its runs pulled to a device
};

// Each range's tally (index as in `ranges`), the migrations taken in time order; those that fall in
// no managed allocation are counted in `unattributed`. `spans`: the kernels' runs, to name the
// kernels whose faults pulled each range to a device.
std::vector<MigrationTally> tally_migrations(const std::vector<ManagedMigration>& migrations,
                                             const std::vector<ManagedRanges::Range>& ranges, uint64_t& unattributed,
                                             const std::vector<KernelSpan>& spans = {});

std::vector<report::Finding> migration_findings(const ProcessTrace& trace, const ManagedRanges& ranges,
                                                StackResolver& stacks, const MigrationOptions& options);
// The same, replaying `trace` (all its events in memory) for the managed allocations.
std::vector<report::Finding> migration_findings(const ProcessTrace& trace, StackResolver& stacks,
                                                const MigrationOptions& options);

}  // namespace cuaudit
