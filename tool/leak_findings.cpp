#include "leak_findings.h"

#include <algorithm>
#include <map>
#include <tuple>

#include <fmt/format.h>

namespace cuaudit {
namespace {

struct Group {
  Api api;
  LeakEnd end;
  uint64_t stack_id;
  uint64_t bytes = 0;
  uint64_t count = 0;
  int32_t device = -2;
  bool mixed_devices = false;
};

const char* family_words(MemoryFamily f) {
  switch (f) {
    case MemoryFamily::Device:
      return "device memory";
    case MemoryFamily::Managed:
      return "managed memory";
    case MemoryFamily::PinnedHost:
      return "pinned host memory";
    case MemoryFamily::RegisteredHost:
      return "registered host memory";
    case MemoryFamily::StreamOrdered:
      return "stream-ordered (pool) memory";
    case MemoryFamily::Array:
      return "CUDA array";
    case MemoryFamily::MipmappedArray:
      return "mipmapped CUDA array";
    case MemoryFamily::VmmPhysical:
      return "physical memory handle";
    case MemoryFamily::VmmReservation:
      return "virtual address reservation";
    case MemoryFamily::VmmMapping:
      return "virtual memory mapping";
  }
  return "memory";
}

std::vector<std::string> end_notes(LeakEnd end) {
  switch (end) {
    case LeakEnd::ProcessExit:
      return {};
    case LeakEnd::ContextDestroyed:
      return {"never released by the program: reclaimed when its context was destroyed (cudaDeviceReset or "
              "cuCtxDestroy)"};
    case LeakEnd::ProcessDied:
      return {"still live when the process ended abruptly (it never reached exit processing)"};
  }
  return {};
}

}  // namespace

std::vector<report::Finding> leak_findings(const std::vector<LeakedAllocation>& leaks, uint64_t pid,
                                           StackResolver& stacks) {
  std::map<std::tuple<uint64_t, uint16_t, uint8_t>, Group> groups;
  for (const LeakedAllocation& leak : leaks) {
    const Event& a = leak.allocation;
    const Api api = stacks.api_called(a.stack_id, a.api);
    auto [it, inserted] = groups.try_emplace({a.stack_id, static_cast<uint16_t>(api), static_cast<uint8_t>(leak.end)},
                                             Group{api, leak.end, a.stack_id});
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
    f.kind = "leak";
    f.severity = report::Severity::Error;
    f.api = std::string(info.name);
    f.bytes = owns_memory(info.family) ? g.bytes : 0;
    f.count = g.count;
    f.pid = pid;
    if (!g.mixed_devices && g.device >= 0) f.device = g.device;
    f.headline = fmt::format("Leak of {} byte(s) in {} allocation(s) ({}) allocated from:", g.bytes, g.count, info.name);
    f.message = fmt::format("{} byte(s) of {} in {} allocation(s) from {} were never released", g.bytes,
                            family_words(info.family), g.count, info.name);
    f.notes = end_notes(g.end);
    if (!owns_memory(info.family)) {
      f.notes.push_back(fmt::format("a {}: its {} byte(s) are address space, not counted in the leaked bytes",
                                    family_words(info.family), g.bytes));
    }
    f.stack = stacks.user_stack(g.stack_id);
    findings.push_back(std::move(f));
  }
  return findings;
}

}  // namespace cuaudit
