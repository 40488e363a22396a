// Sites that allocate and free again and again: how many pairs, how long their memory lived, and
// how much of the run the program spent inside their allocation and release calls (measured in the
// target), with the advice that fits the memory family. `allocation_churn` is info; a warning
// when the calls took at least --churn-threshold percent of the run.
#pragma once

#include <optional>
#include <unordered_map>
#include <vector>

#include "flat_lookup.h"
#include "replay.h"
#include "report_model.h"
#include "stack_resolver.h"
#include "trace_model.h"

namespace cuaudit {

struct ChurnOptions {
  uint64_t min_pairs = 1000;           // fewer released allocations at a site: not churn
  double min_pairs_per_second = 10;    // ... nor fewer per second of the run
  std::optional<double> warn_percent;  // --churn-threshold: a warning from this share of the run on
};

// Released allocations per site (stack, API), counted during the replay.
class ChurnCounter : public ReplayObserver {
 public:
  struct Site {
    uint64_t stack_id = 0;
    Api api = Api::Count;
    Api release_api = Api::Count;
    uint64_t pairs = 0;
    uint64_t bytes = 0;
    uint64_t call_ns = 0;
    std::vector<uint64_t> lifetimes;  // thinned: every `stride`th pair
    uint64_t stride = 1;
    int32_t device = trace::kUnknownDevice;
  };
  void on_released(const MemoryEvent& allocation, const MemoryEvent& release) override;
  bool prefetches() const override { return true; }
  // At an allocation: the site its release will count in (churn: the release comes soon).
  void prefetch(const Event& e, bool near) override {
    if (e.kind == EventKind::Alloc) site_lookup_.prefetch(sites_, {e.memory().stack_id, e.memory().api}, near);
  }
  // By (stack, API), in stack order.
  std::vector<const Site*> sites() const;

 private:
  struct KeyHash {
    size_t operator()(const std::pair<uint64_t, Api>& k) const {
      return std::hash<uint64_t>()(k.first * 31 + static_cast<uint64_t>(k.second));
    }
  };
  // Hashed: every release of a run looks its site up.
  using Sites = std::unordered_map<std::pair<uint64_t, Api>, Site, KeyHash>;
  Sites sites_;
  FlatLookup<Sites> site_lookup_;
};

// `run`: the run's length in ns (RunBounds::run_ns), which the calls' share is of.
std::vector<report::Finding> churn_findings(const ProcessTrace& trace, const ChurnCounter& counter, uint64_t run,
                                            StackResolver& stacks, const ChurnOptions& options);
// The same, replaying `trace` (all its events in memory) for the counts.
std::vector<report::Finding> churn_findings(const ProcessTrace& trace, StackResolver& stacks,
                                            const ChurnOptions& options);

}  // namespace cuaudit
