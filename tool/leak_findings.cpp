#include "leak_findings.h"

#include <algorithm>
#include <map>
#include <optional>
#include <tuple>

#include <fmt/format.h>

#include "python_frames.h"
#include "release_findings.h"

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
  int32_t device = trace::kUnknownDevice;
  bool mixed_devices = false;
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
  }
  return {};
}

}  // namespace

std::vector<report::Finding> leak_findings(const ProcessTrace& trace, const std::vector<LeakedAllocation>& leaks,
                                           StackResolver& stacks) {
  const uint64_t pid = trace.pid;
  // Allocations from different Python lines through one native path (PyTorch's allocator) are
  // different sites.
  std::map<std::tuple<uint64_t, uint64_t, uint16_t, uint8_t, uint64_t>, Group> groups;
  for (const LeakedAllocation& leak : leaks) {
    const MemoryEvent& a = leak.allocation;
    const Api api = stacks.api_called(a.stack_id, a.api);
    const uint64_t failed_site = leak.failed_release ? leak.failed_release->stack_id : 0;
    auto [it, inserted] = groups.try_emplace(
        {a.stack_id, a.python_stack_id, static_cast<uint16_t>(api), static_cast<uint8_t>(leak.end), failed_site},
        Group{api, leak.end, a.stack_id, a.python_stack_id, leak.failed_release});
    Group& g = it->second;
    g.bytes += a.bytes;
    ++g.count;
    if (inserted) {
      g.device = a.device;
    } else if (g.device != a.device) {
      g.mixed_devices = true;
    }
  }

  std::vector<Group> ordered;
  for (auto& [key, g] : groups) ordered.push_back(g);
  std::sort(ordered.begin(), ordered.end(), [](const Group& a, const Group& b) {
    return std::tie(b.bytes, b.count, a.stack_id) < std::tie(a.bytes, a.count, b.stack_id);
  });

  std::vector<report::Finding> findings;
  for (const Group& g : ordered) {
    const ApiInfo& info = api_info(g.api);
    report::Finding f;
    f.kind = report::FindingKind::Leak;
    f.severity = report::Severity::Error;
    f.api = std::string(info.name);
    f.bytes = owns_memory(info.family) ? g.bytes : 0;
    f.count = g.count;
    f.pid = pid;
    if (!g.mixed_devices && g.device >= 0) f.device = g.device;
    f.headline =
        fmt::format("Leak of {} byte(s) in {} allocation(s) ({}) allocated from:", g.bytes, g.count, info.name);
    f.message = fmt::format("{} byte(s) of {} in {} allocation(s) from {} were never released", g.bytes,
                            family_description(info.family), g.count, info.name);
    f.notes = end_notes(g.end);
    if (g.failed_release) {
      // One story, not two unrelated findings: the wrong release is why this memory leaked.
      f.notes.push_back(fmt::format("{} at {} did not release it (see the mismatched_free finding); release it with {}",
                                    api_info(g.failed_release->api).name, stacks.call_site(g.failed_release->stack_id),
                                    right_release_for(g.api)));
    }
    if (!owns_memory(info.family)) {
      f.notes.push_back(fmt::format("a {}: its {} byte(s) are address space, not counted in the leaked bytes",
                                    family_description(info.family), g.bytes));
    }
    f.stack = stacks.user_stack(g.stack_id);
    if (g.python_stack_id) {
      std::vector<report::Frame> python = python_frames(trace, g.python_stack_id);
      const size_t user = user_python_frame(python);
      if (user < python.size()) {
        f.notes.push_back(fmt::format("allocated from Python at {}:{} in {}", python[user].file, python[user].line,
                                      python[user].function));
      }
      f.related.push_back({report::RelatedRole::Python, "", "Python stack of the allocation:", std::move(python)});
    }
    findings.push_back(std::move(f));
  }
  return findings;
}

}  // namespace cuaudit
