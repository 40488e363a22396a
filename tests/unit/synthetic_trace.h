// Builds ProcessTrace event streams by hand, as the injection would have recorded them.
#pragma once

#include "holders.h"
#include "trace_model.h"

namespace cuaudit::testing {

// No held_by_allocator rules and no path map: every leak a check makes is the program's.
inline Holders& no_holders() {
  static Suppressions rules;
  static const std::vector<PathMapping> paths;
  static Holders holders(rules, paths);
  return holders;
}

class SyntheticTrace {
 public:
  SyntheticTrace();
  SyntheticTrace& alloc(Api api, uint64_t key, uint64_t bytes, uint64_t stack = 1, int32_t result = 0,
                        uint32_t context = 1, int32_t device = 0);
  SyntheticTrace& release(Api api, uint64_t key, int32_t result = 0, uint64_t bytes = 0, uint64_t stack = 2);
  SyntheticTrace& destroy_context(uint32_t context);
  SyntheticTrace& end();  // the process reached exit processing
  // A memory sample taken now (between the events before and after it).
  SyntheticTrace& sample(uint64_t used_bytes, int32_t device = 0, uint64_t launches = 0);
  // A kernel parameter that failed a launch check.
  SyntheticTrace& launch_param(const std::string& kernel, uint16_t index, uint64_t value, trace::LaunchProblem problem,
                               uint32_t alignment = 0, bool host_readable = false, uint64_t stack = 3);
  // A pointer into `pointer_device`'s memory given to a kernel on `launch_device` without access.
  SyntheticTrace& peer_launch_param(const std::string& kernel, uint16_t index, uint64_t value, int8_t pointer_device,
                                    int8_t launch_device, uint64_t stack = 3);
  // Python: a stack (innermost first) and an allocation made from it.
  SyntheticTrace& python_stack(uint64_t id, std::vector<PythonFrameInfo> frames);
  SyntheticTrace& alloc_from_python(Api api, uint64_t key, uint64_t bytes, uint64_t python_stack, uint64_t stack = 1);
  // The last allocation or release happened after this many kernel launches.
  SyntheticTrace& after_launches(uint64_t launches);
  // The last allocation or release spent this long inside the call.
  SyntheticTrace& took(uint32_t call_ns);
  // What the injection writes after a failed allocation: the device's pool and other processes.
  SyntheticTrace& failure_state(int32_t device, std::optional<uint64_t> other_processes,
                                std::optional<uint64_t> pool_reserved = {}, std::optional<uint64_t> pool_used = {});
  // Graphs: a memory node (alloc or free) made at `stack`, an executable graph instantiated from
  // a graph, a graph destroyed, a launch.
  SyntheticTrace& graph_node(uint64_t graph, uint64_t dptr, uint64_t bytes, bool alloc, Api api, uint64_t stack = 7);
  SyntheticTrace& instantiate(uint64_t exec, uint64_t graph, uint64_t flags = 0);
  SyntheticTrace& destroy_graph(uint64_t graph);
  SyntheticTrace& launch_graph(uint64_t exec, int32_t result = 0);
  // An IPC or pool export of `pointer` now; or the import the last allocation was (same seq).
  SyntheticTrace& exported(uint64_t pointer, uint64_t handle_hash);
  SyntheticTrace& imported(uint64_t handle_hash);
  // Pools: one the program registered (an NVTX heap named `name`), a block it handed out or took
  // back (the API says which), and a release of the whole pool (nvtxMemHeapUnregister / Reset).
  SyntheticTrace& pool(uint32_t pool, const std::string& name, trace::PoolKind kind = trace::PoolKind::NvtxHeap,
                       uint64_t made_at_stack = 0);
  SyntheticTrace& block(Api api, uint32_t pool, uint64_t key, uint64_t bytes = 0, uint64_t stack = 5);
  // Memory a pool took to hand blocks out of (mapped), or gave back.
  SyntheticTrace& segment(uint32_t pool, uint64_t base, uint64_t bytes, bool mapped = true);
  // What unified memory did now (after the last event, before the next): CUPTI's record, on
  // `device` (the faulting device, the one pages moved to or from).
  SyntheticTrace& migration(trace::MigrationKind kind, uint64_t address, uint64_t value, uint32_t device = 0,
                            trace::MigrationCause cause = trace::MigrationCause::Unknown);
  // `kernel` ran on `device` from just before the next migration for `ns` (CUPTI's kernel record).
  SyntheticTrace& kernel_run(const std::string& kernel, uint64_t ns, uint32_t device = 0, uint32_t stream = 7);
  SyntheticTrace& pid(uint64_t pid);
  // Recorded in watch mode: allocations' stacks sampled (stack 0, trace::kNoStack: not sampled).
  SyntheticTrace& sampled_stacks(uint64_t mean_bytes, uint64_t exact_bytes);
  // Later events happen `ns` later than they otherwise would.
  SyntheticTrace& wait(uint64_t ns);
  const ProcessTrace& trace() const { return trace_; }

 private:
  uint32_t kernel_id(const std::string& kernel);  // the id it has, or a new one
  Event next(EventKind kind);
  Event memory_event(EventKind kind, Api api, uint64_t key, uint64_t bytes, uint64_t stack, int32_t result);
  ProcessTrace trace_;
  uint64_t seq_ = 1;
  uint64_t waited_ns_ = 0;
};

}  // namespace cuaudit::testing
