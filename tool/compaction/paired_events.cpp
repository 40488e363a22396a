#include "paired_events.h"

#include <algorithm>

namespace cuaudit {

void PairedEvents::before(const Event& e) {
  current_ = &e;
  released_live_ = false;
  last_time_ns_ = std::max(last_time_ns_, e.time_ns);
}

void PairedEvents::after(const Event& e, const std::vector<Judged>& judged) {
  current_ = nullptr;
  for (const Judged& j : judged) {
    // Released before, by a release left out with it: both are kept after all (a double release's
    // finding shows the first release).
    if (j.first_release && !kept(j.allocation) && !kept(j.first_release)) --paired_;
    judged_.insert(j.allocation);
    if (j.first_release) judged_.insert(j.first_release);
  }
  if (released_live_ && judged_.count(released_)) {  // released and judged at once (another family's API)
    released_live_ = false;
    --paired_;
  }
  if (!e.is_memory()) return;
  // A successful allocation is kept while it lives (live_); one that failed, or did not become live,
  // is kept as it is. A release is left out only with the allocation it released.
  if (e.kind == EventKind::Alloc ? !live_.count(e.seq) : !released_live_) kept_.insert(e.seq);
}

void PairedEvents::on_live(const MemoryEvent& a) {
  // Only an allocation its own record made: a graph's launch allocates without one.
  if (current_ && current_->kind == EventKind::Alloc && current_->seq == a.seq) live_.insert(a.seq);
}

void PairedEvents::on_released(const MemoryEvent& allocation, const MemoryEvent& release) {
  if (!current_ || current_->kind != EventKind::Free || current_->seq != release.seq) return;  // a graph's free node
  if (!judged_.count(allocation.seq) && live_.erase(allocation.seq)) {
    released_live_ = true;
    released_ = allocation.seq;
    ++paired_;
  }
}

void pair_events(const ProcessTrace& trace, const std::function<void(const EventSink&)>& play, PairedEvents& pairs) {
  Replayer replayer(trace, &pairs);
  std::vector<PairedEvents::Judged> judged;
  play([&](const Event& e) {
    const size_t findings = replayer.so_far().release_findings.size();
    pairs.before(e);
    replayer.apply(e);
    judged.clear();
    const auto& found = replayer.so_far().release_findings;
    for (size_t i = findings; i < found.size(); ++i) {
      const auto& allocation = found[i].allocation;
      if (!allocation) continue;
      // A graph's memory (made by a launch, not a record) was never paired: its first release is
      // kept as it is.
      const bool paired_before = found[i].first_release && allocation->graph_launches == 0;
      judged.push_back({allocation->seq, paired_before ? found[i].first_release->seq : 0});
    }
    pairs.after(e, judged);
  });
}

}  // namespace cuaudit
