#include "synthetic_trace.h"

namespace cuaudit::testing {

SyntheticTrace::SyntheticTrace() {
  trace_.pid = 4242;
  trace_.command = {"./app"};
}

Event SyntheticTrace::next(EventKind kind) {
  Event e;
  e.kind = kind;
  e.seq = seq_++;
  e.time_ns = e.seq * 1000 + waited_ns_;
  return e;
}

Event SyntheticTrace::memory_event(EventKind kind, Api api, uint64_t key, uint64_t bytes, uint64_t stack,
                                   int32_t result) {
  Event e = next(kind);
  e.stack_id = stack;
  MemoryEvent m;
  m.seq = e.seq;
  m.time_ns = e.time_ns;
  m.stack_id = stack;
  m.api = api;
  m.key = key;
  m.bytes = bytes;
  m.result = result;
  e.payload = m;
  return e;
}

SyntheticTrace& SyntheticTrace::pool(uint32_t pool, const std::string& name, trace::PoolKind kind,
                                     uint64_t made_at_stack) {
  trace_.pools[pool] = PoolInfo{kind, name, 0, 0, made_at_stack, 0};
  return *this;
}

SyntheticTrace& SyntheticTrace::block(Api api, uint32_t pool, uint64_t key, uint64_t bytes, uint64_t stack) {
  const bool alloc = api_info(api).role == ApiRole::Alloc;
  Event e = memory_event(alloc ? EventKind::Alloc : EventKind::Free, api, key, bytes, stack, 0);
  e.memory().pool = pool;
  trace_.events.push_back(e);
  return *this;
}

SyntheticTrace& SyntheticTrace::segment(uint32_t pool, uint64_t base, uint64_t bytes, bool mapped) {
  Event e = next(EventKind::PoolSegment);
  e.payload = PoolSegmentFact{pool, base, bytes, 0, mapped};
  trace_.events.push_back(e);
  return *this;
}

SyntheticTrace& SyntheticTrace::python_stack(uint64_t id, std::vector<PythonFrameInfo> frames) {
  trace_.python_stacks[id] = std::move(frames);
  return *this;
}

SyntheticTrace& SyntheticTrace::alloc_from_python(Api api, uint64_t key, uint64_t bytes, uint64_t python_stack,
                                                  uint64_t stack) {
  alloc(api, key, bytes, stack);
  trace_.events.back().memory().python_stack_id = python_stack;
  return *this;
}

SyntheticTrace& SyntheticTrace::after_launches(uint64_t launches) {
  trace_.events.back().memory().launches = launches;
  return *this;
}

SyntheticTrace& SyntheticTrace::took(uint32_t call_ns) {
  trace_.events.back().memory().call_ns = call_ns;
  return *this;
}

SyntheticTrace& SyntheticTrace::failure_state(int32_t device, std::optional<uint64_t> other_processes,
                                              std::optional<uint64_t> pool_reserved,
                                              std::optional<uint64_t> pool_used) {
  DeviceState d;
  d.seq = seq_++;
  d.time_ns = d.seq * 1000 + waited_ns_;
  d.device = device;
  d.at_failed_allocation = true;
  d.other_processes_bytes = other_processes;
  d.pool_reserved = pool_reserved;
  d.pool_used = pool_used;
  trace_.device_states.push_back(d);
  return *this;
}

SyntheticTrace& SyntheticTrace::migration(trace::MigrationKind kind, uint64_t address, uint64_t value, uint32_t device,
                                          trace::MigrationCause cause) {
  const uint64_t now = seq_ * 1000 + waited_ns_ - 500;  // between the last event and the next
  // CUPTI's ids: a move to a device names it as the destination, everything else as the source.
  constexpr uint32_t kHost = 99;
  const bool to_device = kind == trace::MigrationKind::HostToDevice;
  trace_.managed_migrations.push_back(
      {now, now + 100, address, value, to_device ? kHost : device, to_device ? device : kHost, kind, cause});
  return *this;
}

SyntheticTrace& SyntheticTrace::kernel_run(const std::string& kernel, uint64_t ns, uint32_t device, uint32_t stream) {
  const uint64_t now = seq_ * 1000 + waited_ns_ - 500;
  trace_.kernel_spans.push_back({now - 50, now + ns, kernel_id(kernel), device, stream});
  return *this;
}

SyntheticTrace& SyntheticTrace::wait(uint64_t ns) {
  waited_ns_ += ns;
  return *this;
}

SyntheticTrace& SyntheticTrace::alloc(Api api, uint64_t key, uint64_t bytes, uint64_t stack, int32_t result,
                                      uint32_t context, int32_t device) {
  Event e = memory_event(EventKind::Alloc, api, key, bytes, stack, result);
  e.memory().context_uid = context;
  e.memory().device = is_host_family(api_info(api).family) ? trace::kHostDevice : device;
  trace_.events.push_back(e);
  return *this;
}

SyntheticTrace& SyntheticTrace::release(Api api, uint64_t key, int32_t result, uint64_t bytes, uint64_t stack) {
  trace_.events.push_back(memory_event(EventKind::Free, api, key, bytes, stack, result));
  return *this;
}

SyntheticTrace& SyntheticTrace::destroy_context(uint32_t context) {
  Event e = next(EventKind::ContextDestroyed);
  e.payload = ContextChange{context, 0};
  trace_.events.push_back(e);
  return *this;
}

SyntheticTrace& SyntheticTrace::sample(uint64_t used_bytes, int32_t device, uint64_t launches) {
  constexpr uint64_t kTotal = 80ull << 30;
  const uint64_t seq = seq_++;
  trace_.samples.push_back({seq, seq * 1000 + waited_ns_, device, kTotal - used_bytes, kTotal, launches});
  return *this;
}

uint32_t SyntheticTrace::kernel_id(const std::string& kernel) {
  for (const auto& [known, name] : trace_.kernels) {
    if (name == kernel) return known;
  }
  const auto id = static_cast<uint32_t>(trace_.kernels.size() + 1);
  trace_.kernels[id] = kernel;
  return id;
}

SyntheticTrace& SyntheticTrace::launch_param(const std::string& kernel, uint16_t index, uint64_t value,
                                             trace::LaunchProblem problem, uint32_t alignment, bool host_readable,
                                             uint64_t stack) {
  const uint32_t id = kernel_id(kernel);
  Event e = next(EventKind::LaunchParam);
  e.stack_id = stack;
  LaunchParamFact fact;
  fact.value = value;
  fact.kernel_id = id;
  fact.alignment = alignment;
  fact.param_index = index;
  fact.problem = problem;
  fact.path = static_cast<uint8_t>(trace::LaunchPath::cudaLaunchKernel);
  fact.host_readable = host_readable;
  e.payload = fact;
  trace_.events.push_back(e);
  return *this;
}

SyntheticTrace& SyntheticTrace::graph_node(uint64_t graph, uint64_t dptr, uint64_t bytes, bool alloc, Api api,
                                           uint64_t stack) {
  Event e = next(EventKind::GraphMemNode);
  e.stack_id = stack;
  e.payload = GraphNodeFact{graph, dptr * 3, dptr, bytes, 0, api, alloc};
  trace_.events.push_back(e);
  return *this;
}

SyntheticTrace& SyntheticTrace::instantiate(uint64_t exec, uint64_t graph, uint64_t flags) {
  Event e = next(EventKind::GraphChange);
  e.payload = GraphChangeFact{trace::GraphChange::ExecCreated, graph, 0, exec, flags};
  trace_.events.push_back(e);
  return *this;
}

SyntheticTrace& SyntheticTrace::destroy_graph(uint64_t graph) {
  Event e = next(EventKind::GraphChange);
  e.payload = GraphChangeFact{trace::GraphChange::GraphDestroyed, graph, 0, 0, 0};
  trace_.events.push_back(e);
  return *this;
}

SyntheticTrace& SyntheticTrace::launch_graph(uint64_t exec, int32_t result) {
  Event e = next(EventKind::GraphLaunch);
  e.payload = GraphLaunchFact{exec, result};
  trace_.events.push_back(e);
  return *this;
}

SyntheticTrace& SyntheticTrace::exported(uint64_t pointer, uint64_t handle_hash) {
  const Event e = next(EventKind::ProcessEnd);  // only its seq and time: exports are not events
  trace_.shared_memory.push_back({e.seq, e.time_ns, pointer, handle_hash, trace::SharedRole::Export});
  return *this;
}

SyntheticTrace& SyntheticTrace::imported(uint64_t handle_hash) {
  const Event& open = trace_.events.back();
  trace_.shared_memory.push_back({open.seq, open.time_ns, open.memory().key, handle_hash, trace::SharedRole::Import});
  return *this;
}

SyntheticTrace& SyntheticTrace::pid(uint64_t pid) {
  trace_.pid = pid;
  return *this;
}

SyntheticTrace& SyntheticTrace::sampled_stacks(uint64_t mean_bytes, uint64_t exact_bytes) {
  trace_.stack_sampling = {mean_bytes, exact_bytes};
  return *this;
}

SyntheticTrace& SyntheticTrace::end() {
  trace_.events.push_back(next(EventKind::ProcessEnd));
  trace_.reached_exit = true;
  return *this;
}

SyntheticTrace& SyntheticTrace::peer_launch_param(const std::string& kernel, uint16_t index, uint64_t value,
                                                  int8_t pointer_device, int8_t launch_device, uint64_t stack) {
  launch_param(kernel, index, value, trace::LaunchProblem::PeerNotEnabled, 0, false, stack);
  auto& fact = std::get<LaunchParamFact>(trace_.events.back().payload);
  fact.pointer_device = pointer_device;
  fact.launch_device = launch_device;
  return *this;
}

}  // namespace cuaudit::testing
