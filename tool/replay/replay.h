// Replays a process's allocations and releases in order: what was still live at the end, and
// which releases were wrong (mismatched, double, invalid).
//
// Events are replayed in sequence order per key space (CUDA's own allocations in allocation_table.h,
// a pool's blocks in its heap, pool_heaps.h; a pool's own figures in its usage). Failed allocations
// are not live; failed releases free nothing; releases refused during CUDA shutdown are neither
// leaks nor judged; a context's destruction reclaims its memory (not pool or VMM memory). Each
// release is judged: the exact live key of its family is fine; another family or key space is
// mismatched_free; inside a live allocation, or unknown and refused, invalid_free; released before
// and not allocated since, double_free; unknown but accepted by CUDA (memory allocated before
// cuaudit saw it) is not judged. An executable graph's launch allocates at the alloc nodes it was
// instantiated with and releases at its free nodes (auto-free-on-launch frees the last launch's first).
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "ownership.h"
#include "pool_usage.h"
#include "pool_view.h"
#include "trace_model.h"

namespace cuaudit {

// Why a leaked allocation's life ended without the program releasing it.
enum class LeakEnd : uint8_t {
  ProcessExit,       // still live when the process exited
  ContextDestroyed,  // reclaimed by cudaDeviceReset / cuCtxDestroy, never released by the program
  ProcessDied,       // live when the trace ends and the process never reached exit processing
  StillRunning,      // a snapshot: live when the trace was read, the process still running
  PoolReleased,      // a pool block still handed out when its pool was unregistered or reset
};

struct LeakedAllocation {
  MemoryEvent allocation;  // the allocation that made it live
  LeakEnd end;
  // A mismatched release that did not release it: its index in ReplayResult::failed_releases, or -1.
  int32_t failed_release = -1;
  Owner owner{};  // who held it (ownership.h): the program, a pool's reserve, or a pool's block
};

enum class ReleaseProblem : uint8_t {
  Mismatched,  // released through an API of another family
  Double,      // released again after it was released
  Invalid,     // a pointer or handle no allocator returned (or an interior pointer)
};

struct ReleaseFinding {
  ReleaseProblem problem;
  MemoryEvent release;                       // the offending call
  std::optional<MemoryEvent> allocation;     // the allocation it concerns, when there is one
  std::optional<MemoryEvent> first_release;  // Double: the release that already released it
  uint64_t offset = 0;                       // Invalid: offset of the pointer inside `allocation`
};

// Where a kernel parameter that failed a launch check pointed, at that launch.
struct LaunchParamJudgement {
  Event launch;                        // the LaunchParam event
  std::optional<MemoryEvent> live;     // the live allocation the value points into
  std::optional<MemoryEvent> freed;    // else: the released allocation it points into...
  std::optional<MemoryEvent> release;  // ...and the release that freed it
  uint64_t offset = 0;                 // of the value inside `live` or `freed`
};

struct ReplayResult {
  std::vector<LeakedAllocation> leaks;
  std::vector<MemoryEvent> failed_releases;  // what LeakedAllocation::failed_release points to
  std::vector<ReleaseFinding> release_findings;
  uint64_t allocations = 0;  // successful allocation calls
  uint64_t releases = 0;     // successful release calls
  uint64_t failed_allocations = 0;
  // Releases that CUDA refused because it was already shutting down (cudaErrorCudartUnloading
  // from a static destructor): the program did release them, so they are not its leaks.
  uint64_t released_during_shutdown = 0;
  // Successful releases of keys cuaudit never saw allocated (memory allocated before cuaudit
  // subscribed, or by an API it does not track): not judged.
  uint64_t unmatched_releases = 0;
  // Releases the replay forgot, oldest first, to keep its memory bounded (released_memory.h): a
  // second release of their memory was judged an invalid release, not a double one.
  uint64_t forgotten_releases = 0;
  std::vector<LaunchParamJudgement> launch_params;
  // Who owns each allocation the replay saw (a pool's reserve, a pool's block, the program): what
  // every check asks. It points into the trace's pools: valid while the trace is.
  Ownership ownership;
};

// Memory the program holds on one device at one moment, in all and by allocation family.
struct DeviceHoldings {
  uint64_t total = 0;
  std::array<uint64_t, kMemoryFamilies> by_family{};
  // Of that, what frameworks' pools (PyTorch's, CuPy's) have handed out as blocks: allocated,
  // inside the segments they reserved (which `total` counts).
  uint64_t framework_blocks = 0;
};

// Sees the allocation state at each memory sample, in order (the timeline is built this way).
// Visits every allocation live at that moment (any device).
using LiveVisitor = std::function<void(const std::function<void(const MemoryEvent&)>&)>;

// Sees the replay as it goes; each hook has an empty default.
class ReplayObserver {
 public:
  virtual ~ReplayObserver() = default;
  // A memory sample: `held` is what the program holds on the sample's device.
  virtual void on_sample(const MemorySample&, const DeviceHoldings& /*held*/, const LiveVisitor&) {}
  // An allocation that failed (any result but success), with what the program held on its device
  // and what its pools held then.
  virtual void on_failed_allocation(const MemoryEvent&, const DeviceHoldings& /*held*/, const LiveVisitor&,
                                    const PoolsView& /*pools*/) {}
  // A live allocation released by the program (not by a context reset, not refused).
  virtual void on_released(const MemoryEvent& /*allocation*/, const MemoryEvent& /*release*/) {}
  // Every event, in order, before the replay applies it.
  virtual void on_event(const Event&) {}
  // An allocation became live, or stopped being live before the end (released, reclaimed with its
  // context, replaced by a new allocation at its address): the live set's changes, one by one.
  virtual void on_live(const MemoryEvent&) {}
  virtual void on_gone(const MemoryEvent&) {}
  // A live CUDA allocation turned out to be pool `pool`'s reserve (a segment it hands blocks out
  // of), once per allocation, after its on_live: its bytes are the pool's from now on, its blocks
  // the program's.
  virtual void on_reserve(const MemoryEvent& /*allocation*/, uint32_t /*pool*/) {}
  // A pool is about to take a segment (it grows): its usage just before, and the pools as they are
  // then (what sits between its holes). Rare: once per segment.
  virtual void on_pool_growing(const PoolSegmentFact& /*segment*/, const PoolUsage& /*before*/,
                               const PoolsView& /*pools*/) {}
  // After a memory sample: a pool whose blocks or segments changed since the last sample, and its
  // usage now.
  virtual void on_pool_sample(const MemorySample&, uint32_t /*pool*/, const PoolUsage&, const PoolsView& /*pools*/) {}
  // An event a few places ahead of the one being applied, twice: far (`near` false), then near. An
  // observer that will look something up for it may start loading it now, so that the cache misses
  // of several events overlap (the sites of a long run do not fit in a cache). Only observers whose
  // prefetches() is true are asked; a prefetch must change nothing.
  virtual bool prefetches() const { return false; }
  virtual void prefetch(const Event&, bool /*near*/) {}
};

// Several observers of one replay, each seeing every hook in the order they were added.
class ObserverList : public ReplayObserver {
 public:
  void add(ReplayObserver* o) {
    list_.push_back(o);
    if (o->prefetches()) prefetching_.push_back(o);
  }
  bool prefetches() const override { return !prefetching_.empty(); }
  void prefetch(const Event& e, bool near) override {
    for (auto* o : prefetching_) o->prefetch(e, near);
  }
  void on_sample(const MemorySample& s, const DeviceHoldings& held, const LiveVisitor& live) override {
    for (auto* o : list_) o->on_sample(s, held, live);
  }
  void on_failed_allocation(const MemoryEvent& e, const DeviceHoldings& held, const LiveVisitor& live,
                            const PoolsView& pools) override {
    for (auto* o : list_) o->on_failed_allocation(e, held, live, pools);
  }
  void on_released(const MemoryEvent& a, const MemoryEvent& r) override {
    for (auto* o : list_) o->on_released(a, r);
  }
  void on_event(const Event& e) override {
    for (auto* o : list_) o->on_event(e);
  }
  void on_live(const MemoryEvent& a) override {
    for (auto* o : list_) o->on_live(a);
  }
  void on_gone(const MemoryEvent& a) override {
    for (auto* o : list_) o->on_gone(a);
  }
  void on_reserve(const MemoryEvent& a, uint32_t pool) override {
    for (auto* o : list_) o->on_reserve(a, pool);
  }
  void on_pool_growing(const PoolSegmentFact& s, const PoolUsage& before, const PoolsView& pools) override {
    for (auto* o : list_) o->on_pool_growing(s, before, pools);
  }
  void on_pool_sample(const MemorySample& s, uint32_t pool, const PoolUsage& usage, const PoolsView& pools) override {
    for (auto* o : list_) o->on_pool_sample(s, pool, usage, pools);
  }

 private:
  std::vector<ReplayObserver*> list_;
  std::vector<ReplayObserver*> prefetching_;  // those of list_ that prefetch
};

// The replay as it goes, one event at a time (the events of a trace too large to hold, as they
// are read). The samples come from trace.samples, each before the first event after it.
class Replayer {
 public:
  Replayer(const ProcessTrace& trace, ReplayObserver* observer);
  ~Replayer();
  void apply(const Event& e);
  // An event a few places ahead of the next apply() (ReplayObserver::prefetch).
  void prefetch(const Event& e, bool near) {
    if (observer_ && observer_->prefetches()) observer_->prefetch(e, near);
  }
  // After the last event: what is live then leaked, as `end` says (by default, as the trace says).
  ReplayResult finish(std::optional<LeakEnd> end = std::nullopt);
  // What the replay has found so far (the findings of the events applied).
  const ReplayResult& so_far() const { return result_; }

 private:
  struct State;
  void observe_samples_before(uint64_t seq);
  DeviceHoldings holdings(int32_t device) const;
  const ProcessTrace& trace_;
  ReplayObserver* observer_;
  ReplayResult result_;
  std::unique_ptr<State> state_;
  LiveVisitor live_;
  size_t sample_ = 0;
};

// The whole replay of a trace whose events are all in memory.
ReplayResult replay(const ProcessTrace& trace, ReplayObserver* observer = nullptr);

}  // namespace cuaudit
