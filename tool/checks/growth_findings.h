// Memory that grew while the program ran, attributed to the Python line that allocated it.
//
// What counts is the memory still live when the program's work ended (its last kernel launch, seen
// in the memory samples; without them, at exit): a healthy training loop allocates what it keeps
// in its first steps and then reuses it, a growing one keeps allocating to the end. A Python line
// is reported as growth when memory live at the end was allocated from it at least
// kMinGrowthAllocations times, at least a third of those came in the second half of the program's
// work after its first one, they span a quarter of the work since the line's first allocation
// (released or not: how long the process ran before the loop does not count), and they were made all along: in at least
// half of the stretches from the first of them to the end (kGrowthStretches), not in the first step and the last. Work
// is counted in kernel launches (interpreter start-up and shutdown launch nothing; between two memory samples, an
// allocation without its own count is placed by time); a trace without launch counts uses time instead.
//
// PyTorch's caching allocator calls cudaMalloc only for new segments, from whichever line (or
// autograd thread) first needs one, so the attribution is exact only with the cache off
// (PYTORCH_NO_CUDA_MEMORY_CACHING=1): then every tensor is an allocation of its own.
#pragma once

#include <functional>
#include <unordered_map>
#include <vector>

#include "replay.h"
#include "report_model.h"
#include "run_bounds.h"
#include "stack_resolver.h"

namespace cuaudit {

inline constexpr uint64_t kMinGrowthAllocations = 4;
// The work from a site's first allocation held at the end to the end of the work, cut in this many
// equal stretches: memory that grows was made in at least kMinGrowthStretches of them.
inline constexpr size_t kGrowthStretches = 8;
inline constexpr size_t kMinGrowthStretches = 4;

// What the growth check needs of the replay, in a Python process: what was live at the end of the
// work, the moment the run's last kernel-launch count was seen: by its last allocation made from
// Python, else by the first memory sample. What the interpreter frees at shutdown, after the work (a
// list released with its module, numba-cuda's deferred frees), was still held there; the check
// decides which of it counts (`held_at_end_of_work`'s `counts`).
class GrowthObserver : public ReplayObserver {
 public:
  explicit GrowthObserver(const ProcessTrace& trace);
  void on_sample(const MemorySample& s, const DeviceHoldings& held, const LiveVisitor& live) override;
  void on_live(const MemoryEvent& a) override;
  void on_gone(const MemoryEvent& a) override;
  // The most kernel launches a sample or an allocation saw (0: the trace counts none).
  uint64_t launches_seen() const { return launches_seen_; }
  // When the work ended (0: the trace counts no launches).
  uint64_t end_of_work_ns() const { return end_of_work_ns_; }
  // Live at the end of the work: `at_exit` (live when the process ended), and what was made before
  // the end of the work and released after it where `counts` says so (none when the trace counts no
  // launches).
  std::vector<MemoryEvent> held_at_end_of_work(const std::vector<LeakedAllocation>& at_exit,
                                               const std::function<bool(const MemoryEvent&)>& counts) const;
  // The first allocation ever made from `a`'s stack (its Python stack, else its native one),
  // released or not: where that site's work began.
  const MemoryEvent& first_made(const MemoryEvent& a) const;

 private:
  // A launch count seen at event `seq` (an allocation's, or a sample's): a higher one than before,
  // or the same one at a later allocation, moves the end of the work there.
  void saw_launches(uint64_t launches, uint64_t seq, uint64_t time_ns, bool allocation);

  bool python_;
  uint64_t launches_seen_ = 0, end_of_work_seq_ = 0, end_of_work_ns_ = 0;
  std::vector<MemoryEvent> gone_after_end_of_work_;  // made before the end of the work, released after it
  std::unordered_map<uint64_t, MemoryEvent> first_by_python_, first_by_native_;
};

// `at_exit`: what was live at exit (used when the trace has no launch-counting samples); `owners`:
// the replay's (a pool's reserve is no site of its own: its blocks say where the memory went).
std::vector<report::Finding> growth_findings(const ProcessTrace& trace, const GrowthObserver& observer,
                                             const RunBounds& bounds, const std::vector<LeakedAllocation>& at_exit,
                                             const Ownership& owners, StackResolver& stacks);
// The same, replaying `trace` (all its events in memory).
std::vector<report::Finding> growth_findings(const ProcessTrace& trace, const std::vector<LeakedAllocation>& at_exit,
                                             StackResolver& stacks);

}  // namespace cuaudit
