// Allocations that failed for lack of memory, diagnosed: the device at that moment (total, free,
// what the program held by family, its pool's unused reserve, other processes' memory), the sites
// that held the most, and a one-line verdict on what filled the device. `out_of_memory` is an
// error when the program never looked at the failure, a warning when it handled it.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "error_findings.h"
#include "replay.h"
#include "report_model.h"
#include "stack_resolver.h"
#include "stack_sample_weights.h"
#include "trace_model.h"

namespace cuaudit {

// The replay's state at the first out-of-memory failure of each site (stack, API).
class OomObserver : public ReplayObserver {
 public:
  // In watch mode each holder's figures are what its sampled stacks stand for
  // (stack_sample_weights.h), and memory without a sampled stack is in no holder.
  explicit OomObserver(const StackSampling& sampling = {}) : sampling_(sampling) {}
  // A site holding memory on the failing device: a native stack, or for a framework pool's blocks
  // (tensors, arrays) their Python stack.
  struct Holder {
    uint64_t stack_id = 0;
    uint64_t python_stack_id = 0;
    Api api = Api::Count;
    uint64_t bytes = 0;
    uint64_t count = 0;
    uint64_t first_ns = UINT64_MAX, last_ns = 0;
  };
  // A pool on the failing device whose holes held the request in total but none of them alone.
  struct HoleyPool {
    uint32_t pool = 0;
    PoolUsage usage;
  };
  struct Moment {
    MemoryEvent failure;
    DeviceHoldings held;
    std::vector<Holder> holders;  // biggest first
    std::optional<HoleyPool> holey_pool;
  };
  void on_failed_allocation(const MemoryEvent& e, const DeviceHoldings& held, const LiveVisitor& live,
                            const PoolsView& pools) override;
  // By (native stack, Python stack, API): a framework's own refusals have no native stack.
  using MomentKey = std::tuple<uint64_t, uint64_t, Api>;
  const std::map<MomentKey, Moment>& moments() const { return moments_; }

 private:
  StackSampling sampling_;
  std::map<MomentKey, Moment> moments_;
};

// `trace.events` needs the failed allocations only (the replay's observer saw the rest).
// Failures it reports are added to `explained`: the error check does not report them again.
std::vector<report::Finding> oom_findings(const ProcessTrace& trace, const OomObserver& observer, StackResolver& stacks,
                                          FailureJudge& failures, std::set<uint64_t>& explained);
// The same, replaying `trace` (all its events in memory).
std::vector<report::Finding> oom_findings(const ProcessTrace& trace, StackResolver& stacks, FailureJudge& failures,
                                          std::set<uint64_t>& explained);

// The verdict, on its own so that it is tested without traces.
struct OomFacts {
  uint64_t requested = 0;
  std::optional<uint64_t> total, free;  // none: host memory
  uint64_t program_held = 0;
  std::optional<uint64_t> other_processes;
  // Of program_held, what must sit in the device's memory (device, pool, array, physical and graph
  // memory; not managed or host memory): a free count that leaves no room for it is contradicted.
  uint64_t resident_held = 0;
  // A pool whose holes, measured by the replay from its blocks and segments, held the request in
  // total but none of them alone (empty: none): its name, the bytes in its holes, its largest hole.
  std::string holey_pool;
  uint64_t pool_holes = 0, pool_largest_free = 0;
  // A framework's allocator refused the request itself, no CUDA call failed (empty: it did not):
  // its name. PyTorch does that when its cap (set_per_process_memory_fraction) would be passed.
  std::string refused_by;
  // The refusing allocator's own statistics, where it gives them (XLA's; 0: not given): the most it
  // may hold, what its blocks held, its largest free block.
  uint64_t allocator_limit = 0, allocator_in_use = 0, allocator_largest_free = 0;
};
// "Fragmentation" is a verdict only where cuaudit measured the holes (a pool's); the device's own
// layout is not visible to it, so a device sample with enough free memory says only that.
// The free memory a verdict may believe: the sample's, unless it contradicts what the program held
// on the device (free + resident held > total; seen on the H200 right after a failed cudaMalloc,
// the driver's count lagging behind allocations it had not backed yet), then what that holding
// leaves at most.
std::optional<uint64_t> believable_free(const OomFacts& facts);
std::string oom_verdict(const OomFacts& facts);

}  // namespace cuaudit
