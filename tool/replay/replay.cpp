#include "replay.h"

#include "allocation_table.h"
#include "memory_owners.h"
#include "pool_heaps.h"

#include <algorithm>
#include <array>
#include <iterator>
#include <map>
#include <unordered_map>

namespace cuaudit {
namespace {

using replay_detail::AllocationTable;
using replay_detail::MemoryOwners;

// What the program built its graphs of: memory nodes per graph, and per executable graph the nodes
// it was instantiated with. Each launch allocates at the alloc nodes' addresses and releases at the
// free nodes'.
class GraphMemory {
 public:
  explicit GraphMemory(AllocationTable& table) : table_(table) {}

  void add_node(const Event& e) {
    const GraphNodeFact& n = e.graph_node();
    nodes_[n.graph].push_back(e);
    if (n.alloc) ranges_[n.dptr] = std::max<uint64_t>(n.bytes, 1);
  }

  void change(const GraphChangeFact& c) {
    switch (c.change) {
      case trace::GraphChange::ExecCreated: {
        const auto it = nodes_.find(c.graph);
        Exec exec;
        if (it != nodes_.end()) exec.nodes = it->second;
        exec.auto_free = c.flags & trace::kGraphAutoFreeOnLaunch;
        execs_[c.exec] = std::move(exec);
        break;
      }
      case trace::GraphChange::GraphCloned:
        if (auto it = nodes_.find(c.original); it != nodes_.end()) nodes_[c.graph] = it->second;
        break;
      case trace::GraphChange::GraphDestroyed:
        nodes_.erase(c.graph);
        break;
      case trace::GraphChange::ExecDestroyed:
        execs_.erase(c.exec);
        break;
    }
  }

  void launch(const Event& e) {
    const GraphLaunchFact& l = e.graph_launch();
    if (l.result != 0) return;  // a failed launch allocates nothing
    auto it = execs_.find(l.exec);
    if (it == execs_.end()) return;
    Exec& exec = it->second;
    ++exec.launches;
    if (exec.auto_free && exec.launches > 1) {
      for (const Event& node : exec.nodes) {
        if (node.graph_node().alloc) table_.release_graph_memory(node.graph_node().dptr);
      }
    }
    for (const Event& node : exec.nodes) {
      if (node.graph_node().alloc) table_.allocate(memory_event(node, e, exec.launches));
    }
    for (const Event& node : exec.nodes) {
      if (!node.graph_node().alloc) table_.release(memory_event(node, e, exec.launches));
    }
  }

  // Whether `address` is inside memory some graph allocates when it runs.
  bool contains(uint64_t address) const {
    auto it = ranges_.upper_bound(address);
    if (it == ranges_.begin()) return false;
    --it;
    return address - it->first < it->second;
  }

 private:
  struct Exec {
    std::vector<Event> nodes;
    bool auto_free = false;
    uint64_t launches = 0;
  };

  // The node's memory at this launch: made where the node was made, when the graph ran.
  static MemoryEvent memory_event(const Event& node, const Event& launch, uint64_t launches) {
    const GraphNodeFact& n = node.graph_node();
    MemoryEvent m;
    m.seq = launch.seq;
    m.time_ns = launch.time_ns;
    m.stack_id = node.stack_id;
    m.tid = node.tid;
    m.api = n.api;
    m.key = n.dptr;
    m.bytes = n.alloc ? n.bytes : 0;
    m.device = n.device;
    m.graph_launches = launches;
    return m;
  }

  AllocationTable& table_;
  std::unordered_map<uint64_t, std::vector<Event>> nodes_;  // graph -> its memory nodes, in order
  std::unordered_map<uint64_t, Exec> execs_;
  std::map<uint64_t, uint64_t> ranges_;  // every alloc node's address -> bytes
};

}  // namespace

struct Replayer::State {
  State(ReplayResult& result, ReplayObserver* observer, const ProcessTrace& trace)
      : pools(result, observer, &trace.pools),
        table(result, observer),
        owners(result, observer, table, pools),
        graphs(table) {}
  PoolHeaps pools;        // the pools' blocks and segments
  AllocationTable table;  // CUDA's own allocations
  MemoryOwners owners;    // who holds what, over both
  GraphMemory graphs;
};

Replayer::Replayer(const ProcessTrace& trace, ReplayObserver* observer)
    : trace_(trace), observer_(observer), state_(std::make_unique<State>(result_, observer, trace)) {
  result_.ownership = Ownership(&trace.pools);
  live_ = [this](const std::function<void(const MemoryEvent&)>& visit) {
    state_->table.for_each_live(visit);
    state_->pools.for_each_live(visit);
  };
}
Replayer::~Replayer() = default;

DeviceHoldings Replayer::holdings(int32_t device) const {
  DeviceHoldings h = state_->table.holdings(device);
  h.framework_blocks = state_->pools.framework_block_bytes(device);
  return h;
}

void Replayer::observe_samples_before(uint64_t seq) {
  for (; sample_ < trace_.samples.size() && trace_.samples[sample_].seq < seq; ++sample_) {
    const MemorySample& s = trace_.samples[sample_];
    if (!observer_) continue;
    observer_->on_sample(s, holdings(s.device), live_);
    state_->pools.take_changed(
        [&](uint32_t pool, const PoolUsage& usage) { observer_->on_pool_sample(s, pool, usage, state_->pools); });
  }
}

void Replayer::apply(const Event& e) {
  observe_samples_before(e.seq);
  AllocationTable& table = state_->table;
  if (observer_) observer_->on_event(e);
  // A pool's block goes to its pool's heap, CUDA's own memory to the allocation table.
  if (e.is_memory() && is_block_op(e.memory().api)) {
    // A pool that refused a block (a framework's own out-of-memory error) hands nothing out.
    if (e.kind == EventKind::Alloc && e.memory().result != 0) {
      if (observer_) observer_->on_failed_allocation(e.memory(), holdings(e.memory().device), live_, state_->pools);
      return;
    }
    state_->pools.apply(e.memory());
    if (e.kind == EventKind::Alloc) state_->owners.block_handed_out(e.memory());
    return;
  }
  switch (e.kind) {
    case EventKind::Alloc:
      if (observer_ && e.memory().result != 0) {
        observer_->on_failed_allocation(e.memory(), holdings(e.memory().device), live_, state_->pools);
      }
      table.allocate(e.memory());
      state_->owners.cuda_allocated(e.memory());
      break;
    case EventKind::Free:
      table.release(e.memory());
      if (e.memory().result == 0) state_->pools.cuda_released(e.memory().key);
      break;
    case EventKind::PoolSegment:
      state_->pools.segment(e.pool_segment());
      state_->owners.segment_mapped(e.pool_segment());
      break;
    case EventKind::PoolFigures:
      state_->pools.figures(e.pool_figures());
      break;
    case EventKind::ContextDestroyed:
      table.destroy_context(e.context().context_uid);
      break;
    case EventKind::LaunchParam:
      state_->owners.judge_launch_param(e, state_->graphs.contains(e.launch_param().value));
      break;
    case EventKind::GraphMemNode:
      state_->graphs.add_node(e);
      break;
    case EventKind::GraphChange:
      state_->graphs.change(e.graph_change());
      break;
    case EventKind::GraphLaunch:
      state_->graphs.launch(e);
      break;
    case EventKind::ContextCreated:
    case EventKind::ProcessEnd:
    case EventKind::FailedCall:
    case EventKind::LastError:
    case EventKind::CallSite:
    case EventKind::Signal:
    case EventKind::ExitCall:
      break;
  }
}

ReplayResult Replayer::finish(std::optional<LeakEnd> end) {
  observe_samples_before(UINT64_MAX);
  const LeakEnd how = end ? *end : trace_.reached_exit ? LeakEnd::ProcessExit : LeakEnd::ProcessDied;
  state_->table.finish(how);
  state_->pools.finish(how);
  result_.forgotten_releases = state_->table.forgotten_releases() + state_->pools.forgotten_releases();
  for (LeakedAllocation& leak : result_.leaks) leak.owner = result_.ownership.owner(leak.allocation);
  return std::move(result_);
}

ReplayResult replay(const ProcessTrace& trace, ReplayObserver* observer) {
  Replayer replayer(trace, observer);
  for (const Event& e : trace.events) replayer.apply(e);
  return replayer.finish();
}

}  // namespace cuaudit
