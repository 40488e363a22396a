// When a process's events began and ended, and the most kernel launches an allocation had seen:
// what rates and shares of the run are measured against. Collected during the replay, so that it
// costs no pass of its own.
#pragma once

#include <algorithm>
#include <cstdint>

#include "replay.h"

namespace cuaudit {

class RunBounds : public ReplayObserver {
 public:
  void on_event(const Event& e) override {
    if (!first_ns_ || e.time_ns < first_ns_) first_ns_ = e.time_ns;
    last_ns_ = std::max(last_ns_, e.time_ns);
    if (e.is_memory()) max_launches_ = std::max(max_launches_, e.memory().launches);
  }
  // The earliest event's time (0: none).
  uint64_t first_event_ns() const { return first_ns_; }
  // The latest event's or sample's time.
  uint64_t last_ns(const ProcessTrace& trace) const {
    uint64_t last = last_ns_;
    for (const MemorySample& s : trace.samples) last = std::max(last, s.time_ns);
    return last;
  }
  // From the process's start (or its first event) to its last fact.
  uint64_t run_ns(const ProcessTrace& trace) const {
    uint64_t first = trace.start_monotonic_ns;
    if (!first || (first_ns_ && first_ns_ < first)) first = first_ns_;
    const uint64_t last = last_ns(trace);
    return last > first ? last - first : 0;
  }
  // Kernel launches before the last allocation made from Python (0: none recorded).
  uint64_t max_allocation_launches() const { return max_launches_; }

 private:
  uint64_t first_ns_ = 0, last_ns_ = 0, max_launches_ = 0;
};

// One replay of an in-memory trace for `observer`, with the run's bounds kept beside it (what the
// checks' one-trace overloads for the tests need).
inline RunBounds replay_with_bounds(const ProcessTrace& trace, ReplayObserver& observer) {
  RunBounds bounds;
  ObserverList both;
  both.add(&observer);
  both.add(&bounds);
  replay(trace, &both);
  return bounds;
}

}  // namespace cuaudit
