// Which allocations and releases of a trace a compaction may leave out: an allocation the program
// released, with the release that released it, both recorded (tool/compaction/trace_compaction.h).
// Whatever else the trace's replay sees is kept: allocations still live (or reclaimed with their
// context), failed calls, releases that released nothing live (double, invalid, mismatched, of
// memory cuaudit never saw allocated), memory that a graph's launch allocated or released, which
// no allocation record of its own made, and every allocation a finding names (a release through
// another family's API, ...) with the release that named it. Replayed again, the kept events leave
// the same allocations live, with the same findings about them.
#pragma once

#include <cstdint>
#include <functional>
#include <unordered_set>
#include <vector>

#include "replay.h"

namespace cuaudit {

class PairedEvents : public ReplayObserver {
 public:
  // Before the replay applies `e`, and after, with the allocations the findings `e` made name: what
  // `e` was is decided once it has been applied.
  void before(const Event& e);
  struct Judged {
    uint64_t allocation = 0;     // the allocation a finding names
    uint64_t first_release = 0;  // a double release's first one, of an allocation record (0: none)
  };
  void after(const Event& e, const std::vector<Judged>& judged);

  // Whether the allocation or release with this seq is kept (after the whole replay).
  bool kept(uint64_t seq) const { return kept_.count(seq) || live_.count(seq) || judged_.count(seq); }
  uint64_t paired() const { return paired_; }  // allocations left out, and as many releases
  uint64_t last_time_ns() const { return last_time_ns_; }

  void on_live(const MemoryEvent& a) override;
  void on_released(const MemoryEvent& allocation, const MemoryEvent& release) override;

 private:
  const Event* current_ = nullptr;
  bool released_live_ = false;           // the current release released a live allocation of a record...
  uint64_t released_ = 0;                // ...this one
  std::unordered_set<uint64_t> live_;    // allocations of records that are live, or ended unreleased
  std::unordered_set<uint64_t> judged_;  // allocations a finding names, and a double release's first
  std::unordered_set<uint64_t> kept_;    // other events kept
  uint64_t paired_ = 0;
  uint64_t last_time_ns_ = 0;
};

using EventSink = std::function<void(const Event&)>;

// Replays the events `play` hands on, in order, over `trace` (everything but its events): `pairs`
// then knows what paired up.
void pair_events(const ProcessTrace& trace, const std::function<void(const EventSink&)>& play, PairedEvents& pairs);

}  // namespace cuaudit
