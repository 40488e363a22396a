// --memory-viz's snapshot of one process (report::MemoryViz): what PyTorch's memory snapshot says of
// its caching allocator, said of every device allocation the replay sees. A pool's segment (a
// cudaMalloc that turned out to be PyTorch's or CuPy's reserve) is a segment whose blocks are the
// pool's; any other allocation is a segment of its own with one block. The trace is PyTorch's
// actions: segment_alloc and alloc, free_requested, free_completed and segment_free.
#pragma once

#include <deque>
#include <map>
#include <optional>
#include <unordered_map>
#include <utility>

#include "replay.h"
#include "report_model.h"
#include "stack_resolver.h"
#include "trace_model.h"

namespace cuaudit {

class MemoryVizCollector : public ReplayObserver {
 public:
  // Keeps the last `max_entries` trace entries (PyTorch's history is a ring buffer too).
  MemoryVizCollector(const ProcessTrace& trace, StackResolver& stacks, size_t max_entries);
  void on_event(const Event& e) override;  // the time of what follows
  void on_live(const MemoryEvent& a) override;
  void on_gone(const MemoryEvent& a) override;
  void on_reserve(const MemoryEvent& a, uint32_t pool) override;
  // The segments and blocks live now, and the trace; none when the process had no device memory.
  std::optional<report::MemoryViz> finish();

 private:
  enum class Kind : uint8_t { Plain, PoolSegment, Block };
  struct Live {
    MemoryEvent event;
    int device;
    uint32_t stack;
    Kind kind;
    uint64_t alloc_entry;  // a plain allocation's "alloc" entry, dropped if it becomes a pool's segment
  };
  static std::pair<uint64_t, uint64_t> live_key(const MemoryEvent& a);
  struct PairHash {
    size_t operator()(const std::pair<uint64_t, uint64_t>& k) const {
      return std::hash<uint64_t>()(k.first * 0x9e3779b97f4a7c15ull ^ k.second);
    }
  };
  uint32_t stack_of(const MemoryEvent& a);
  uint64_t add(report::VizAction action, const Live& live);
  std::vector<report::VizSegment> segments() const;

  const ProcessTrace& trace_;
  StackResolver& stacks_;
  size_t max_entries_;
  report::MemoryViz out_;
  std::map<std::pair<uint64_t, uint64_t>, uint32_t> stack_ids_;             // (stack, Python stack) -> out_.stacks
  std::unordered_map<std::pair<uint64_t, uint64_t>, Live, PairHash> live_;  // by live_key
  std::unordered_map<uint32_t, int> pool_devices_;                          // a pool's device, from its segments
  std::deque<std::pair<report::VizEntry, bool>> entries_;                   // and whether it was dropped
  uint64_t first_entry_ = 0;                                                // the number of entries_.front()
  uint64_t now_ns_ = 0;  // the latest event's time: a release's, when its allocation is gone
};

}  // namespace cuaudit
