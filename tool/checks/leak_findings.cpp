#include "leak_findings.h"

#include <algorithm>
#include <map>
#include <optional>
#include <tuple>

#include <fmt/format.h>

#include "holders.h"
#include "pool_names.h"
#include "python_frames.h"
#include "release_findings.h"
#include "sampled_stacks.h"

namespace cuaudit {
namespace {

struct Group {
  Api api;
  LeakEnd end;
  uint64_t stack_id;
  uint64_t python_stack_id;
  std::optional<MemoryEvent> failed_release;  // of the first allocation in the group that had one
  uint64_t bytes = 0;
  uint64_t count = 0;
  double estimated_bytes = 0, estimated_count = 0;  // what its sampled stacks stand for (watch mode)
  int32_t device = trace::kUnknownDevice;
  bool mixed_devices = false;
  uint64_t graph_launches = 0;  // graph memory: launches of its graph by the last allocation
  Owner owner{};                // who held it (ownership.h): a pool's blocks and reserves group by pool
};

std::vector<std::string> end_notes(LeakEnd end) {
  switch (end) {
    case LeakEnd::ProcessExit:
      return {};
    case LeakEnd::ContextDestroyed:
      return {
          "never released by the program: reclaimed when its context was destroyed (cudaDeviceReset or "
          "cuCtxDestroy)"};
    case LeakEnd::ProcessDied:
      return {"still live when the process ended abruptly (it never reached exit processing)"};
    case LeakEnd::StillRunning:
      return {"live when the snapshot was taken: the program is still running and may release it yet"};
    case LeakEnd::PoolReleased:
      return {
          "still handed out when its pool was unregistered or reset (nvtxMemHeapUnregister, nvtxMemHeapReset): "
          "the program never returned it"};
  }
  return {};
}

// A framework's blocks at exit are Python's arrays, judged for growth, not as leaks; in a snapshot,
// or when the process died, they are what the program held then, by Python line: live.
bool framework_blocks_live(LeakEnd end) { return end == LeakEnd::StillRunning || end == LeakEnd::ProcessDied; }

// What the memory (or handles) of a group is, in the report's words: a leak of the program's.
void describe_leak(report::Finding& f, const Group& g, const ProcessTrace& trace) {
  const ApiInfo& info = api_info(g.api);
  if (is_resource(info.family)) {
    f.headline = fmt::format("Leak of {} {}(s) ({}), never destroyed with {}, created at:", g.count,
                             family_description(info.family), info.name, right_release_for(g.api));
    f.message = fmt::format("{} {}(s) created by {} were never destroyed ({} was never called for them)", g.count,
                            family_description(info.family), info.name, right_release_for(g.api));
  } else if (info.family == MemoryFamily::IpcMapping) {
    f.headline = fmt::format(
        "Leak of {} mapping(s) of another process's memory ({} byte(s), {}) never closed, opened at:", g.count, g.bytes,
        info.name);
    f.message = fmt::format("{} mapping(s) of another process's memory from {} were never closed", g.count, info.name);
  } else if (g.owner.is_block()) {
    const std::string pool = pool_description(trace.pools, g.owner.pool);
    f.headline = fmt::format(
        "Leak of {} byte(s) in {} block(s) of {}, handed out by {} and never returned with {}, at:", g.bytes, g.count,
        pool, info.name, right_release_for(g.api));
    f.message = fmt::format("{} byte(s) in {} block(s) of {} from {} were never returned to it", g.bytes, g.count, pool,
                            info.name);
  } else if (trace.stack_sampling.unsampled(g.stack_id)) {
    f.headline = fmt::format("Leak of {} byte(s) in {} allocation(s) ({}) whose stacks watch mode did not sample",
                             g.bytes, g.count, info.name);
    f.message = fmt::format("{} byte(s) of {} in {} allocation(s) from {} were never released", g.bytes,
                            family_description(info.family), g.count, info.name);
  } else {
    f.headline =
        fmt::format("Leak of {} byte(s) in {} allocation(s) ({}) allocated from:", g.bytes, g.count, info.name);
    f.message = fmt::format("{} byte(s) of {} in {} allocation(s) from {} were never released", g.bytes,
                            family_description(info.family), g.count, info.name);
  }
}

// A snapshot's live memory: what is live now, not what leaked; or a framework's blocks when its
// process died (Python's tensors then, as its hooks last saw them: not leaks either).
void describe_live(report::Finding& f, const Group& g) {
  const ApiInfo& info = api_info(g.api);
  const bool died = g.end == LeakEnd::ProcessDied;
  f.headline =
      fmt::format("Live{}: {} byte(s) in {} allocation(s) ({}) allocated from:", died ? " when the process died" : "",
                  g.bytes, g.count, info.name);
  f.message = fmt::format("{} byte(s) of {} in {} allocation(s) from {} were live {}", g.bytes,
                          family_description(info.family), g.count, info.name,
                          died ? "when the process ended abruptly, as the framework's hooks last wrote them"
                               : "when the snapshot was taken");
}

// What the reader needs to fix it: how its life ended, graph memory, the wrong release, address space.
void add_leak_notes(report::Finding& f, const Group& g, StackResolver& stacks) {
  const ApiInfo& info = api_info(g.api);
  for (std::string& note : end_notes(g.end)) f.notes.push_back(std::move(note));
  if (info.family == MemoryFamily::GraphMemory) {
    f.notes.push_back(fmt::format(
        "allocated when its graph runs: the graph was launched {} time(s) and nothing freed this memory after "
        "the last launch; free it with cudaFreeAsync after the launch, add a free node to the graph "
        "(cudaGraphAddMemFreeNode), or instantiate with cudaGraphInstantiateFlagAutoFreeOnLaunch",
        g.graph_launches));
  }
  if (g.failed_release) {
    // One story, not two unrelated findings: the wrong release is why this memory leaked.
    f.notes.push_back(fmt::format("{} at {} did not release it (see the mismatched_free finding); release it with {}",
                                  api_info(g.failed_release->api).name, stacks.call_site(g.failed_release->stack_id),
                                  right_release_for(g.api)));
  }
  if (info.family == MemoryFamily::IpcMapping) {
    f.notes.push_back(fmt::format(
        "memory of another process, mapped into this one and never unmapped: close it with {}; its {} byte(s) "
        "belong to the exporting process and are not counted in the leaked bytes",
        right_release_for(g.api), g.bytes));
  } else if (!owns_memory(info.family) && !is_resource(info.family) && !g.owner.is_block()) {
    f.notes.push_back(fmt::format("a {}: its {} byte(s) are address space, not counted in the leaked bytes",
                                  family_description(info.family), g.bytes));
  }
}

// Watch mode: a sampled site's figures are what was seen; the estimate says what they stand for.
void add_sampling_note(report::Finding& f, const Group& g, const StackSampling& sampling) {
  if (!sampling.on()) return;
  if (sampling.unsampled(g.stack_id)) {
    f.notes.push_back(unsampled_leak_note(sampling));
  } else if (g.estimated_count > static_cast<double>(g.count) + 0.5) {
    f.notes.push_back(sampled_leak_note(sampling, g.count, g.estimated_count, g.estimated_bytes));
  }
}

void add_stacks(report::Finding& f, const Group& g, const ProcessTrace& trace, StackResolver& stacks) {
  f.stack = stacks.user_stack(g.stack_id);
  if (!g.python_stack_id) return;
  std::vector<report::Frame> python = python_frames(trace, g.python_stack_id);
  const size_t user = user_python_frame(python);
  if (user < python.size()) {
    f.notes.push_back(fmt::format("allocated from Python at {}:{} in {}", python[user].file, python[user].line,
                                  python[user].function));
  }
  // A framework's block has no native stack of its own: the user's line first, then its callers.
  if (f.stack.empty() && user < python.size())
    f.stack.assign(python.begin() + static_cast<std::ptrdiff_t>(user), python.end());
  f.related.push_back({report::RelatedRole::Python, "", "Python stack of the allocation:", std::move(python)});
}

// One group's finding, its kind decided once: live (a snapshot), held by an allocator on purpose
// (holders.h), or the program's leak.
report::Finding make_finding(const Group& g, const ProcessTrace& trace, StackResolver& stacks, Holders& holders) {
  const ApiInfo& info = api_info(g.api);
  report::Finding f;
  f.api = std::string(info.name);
  f.bytes = owns_memory(info.family) || g.owner.is_block() ? g.bytes : 0;
  f.count = g.count;
  f.pid = trace.pid;
  if (!g.mixed_devices && g.device >= 0) f.device = g.device;
  add_leak_notes(f, g, stacks);
  add_sampling_note(f, g, trace.stack_sampling);
  add_stacks(f, g, trace, stacks);  // its Python line the last note
  const bool resource = is_resource(info.family);
  const bool framework_block = g.owner.is_block() && g.owner.framework();
  if (g.end == LeakEnd::StillRunning || (framework_block && framework_blocks_live(g.end))) {
    f.kind = report::FindingKind::Live;
    f.severity = report::Severity::Info;
    describe_live(f, g);
    return f;
  }
  const report::FindingKind kind = resource ? report::FindingKind::ResourceLeak : report::FindingKind::Leak;
  if (std::optional<Holder> holder = holders.held(kind, g.owner, f.stack, f.related, f.bytes)) {
    describe_held(f, *holder, resource);
    return f;
  }
  f.kind = kind;
  f.severity = report::Severity::Error;
  describe_leak(f, g, trace);
  return f;
}

}  // namespace

std::vector<report::Finding> leak_findings(const ProcessTrace& trace, const ReplayResult& replayed,
                                           StackResolver& stacks, Holders& holders) {
  const std::vector<LeakedAllocation>& leaks = replayed.leaks;
  const std::vector<MemoryEvent>& failed_releases = replayed.failed_releases;
  // Allocations from different Python lines through one native path (PyTorch's allocator) are
  // different sites.
  // Blocks of different pools are different sites too, and so are a pool's reserve and the
  // program's own memory from one stack.
  std::map<std::tuple<uint64_t, uint64_t, uint16_t, uint8_t, uint64_t, uint8_t, uint64_t>, Group> groups;
  for (const LeakedAllocation& leak : leaks) {
    const MemoryEvent& a = leak.allocation;
    const Api api = stacks.api_called(a.stack_id, a.api);
    std::optional<MemoryEvent> failed_release;
    if (leak.failed_release >= 0) failed_release = failed_releases.at(static_cast<size_t>(leak.failed_release));
    const uint64_t failed_site = failed_release ? failed_release->stack_id : 0;
    const Owner& owner = leak.owner;
    if (owner.is_block() && owner.framework() && !framework_blocks_live(leak.end)) continue;
    const uint64_t pool = owner.holding == Holding::Program ? 0 : owner.pool;
    auto [it, inserted] =
        groups.try_emplace({a.stack_id, a.python_stack_id, static_cast<uint16_t>(api), static_cast<uint8_t>(leak.end),
                            failed_site, static_cast<uint8_t>(owner.holding), pool},
                           Group{api, leak.end, a.stack_id, a.python_stack_id, failed_release});
    Group& g = it->second;
    g.bytes += a.bytes;
    ++g.count;
    const double weight = trace.stack_sampling.weight(a.bytes);
    g.estimated_count += weight;
    g.estimated_bytes += weight * static_cast<double>(a.bytes);
    g.owner = owner;
    if (!owner.is_block()) g.graph_launches = std::max(g.graph_launches, a.graph_launches);
    if (inserted) {
      g.device = a.device;
    } else if (g.device != a.device) {
      g.mixed_devices = true;
    }
  }

  std::vector<Group> ordered;
  ordered.reserve(groups.size());
  for (auto& [key, g] : groups) ordered.push_back(std::move(g));
  groups.clear();
  std::sort(ordered.begin(), ordered.end(), [](const Group& a, const Group& b) {
    return std::tie(b.bytes, b.count, a.stack_id) < std::tie(a.bytes, a.count, b.stack_id);
  });

  std::vector<report::Finding> findings;
  findings.reserve(ordered.size());
  for (const Group& g : ordered) findings.push_back(make_finding(g, trace, stacks, holders));
  return findings;
}

}  // namespace cuaudit
