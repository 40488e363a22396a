#include "shared_memory_findings.h"

#include <algorithm>

#include <fmt/format.h>

namespace cuaudit {
namespace {

// The first event at or after `seq` (events are sorted by seq).
std::vector<Event>::const_iterator first_from(const ProcessTrace& trace, uint64_t seq) {
  return std::lower_bound(trace.events.begin(), trace.events.end(), seq,
                          [](const Event& e, uint64_t s) { return e.seq < s; });
}

// The first successful release of `key` after `seq`, or null.
const Event* release_after(const ProcessTrace& trace, uint64_t key, uint64_t seq) {
  for (auto it = first_from(trace, seq + 1); it != trace.events.end(); ++it) {
    if (it->kind == EventKind::Free && it->memory().key == key && it->memory().result == 0) return &*it;
  }
  return nullptr;
}

const Event* event_at(const ProcessTrace& trace, uint64_t seq) {
  const auto it = first_from(trace, seq);
  return it != trace.events.end() && it->seq == seq ? &*it : nullptr;
}

double seconds(uint64_t later, uint64_t earlier) {
  return later > earlier ? static_cast<double>(later - earlier) / 1e9 : 0.0;
}

}  // namespace

SharedMemoryImports::SharedMemoryImports(const std::vector<ProcessTrace>& traces) {
  for (const ProcessTrace& trace : traces) {
    for (const SharedMemoryFact& s : trace.shared_memory) {
      if (s.role != trace::SharedRole::Import) continue;
      const Event* open = event_at(trace, s.seq);
      if (!open || !open->is_memory()) continue;
      Mapping m;
      m.pid = trace.pid;
      m.api = open->memory().api;
      m.opened_ns = s.time_ns;
      if (const Event* close = release_after(trace, s.pointer, s.seq)) m.closed_ns = close->time_ns;
      m.end_ns = trace.events.empty() ? s.time_ns : trace.events.back().time_ns;
      imports_[s.handle_hash].push_back(m);
    }
  }
}

const std::vector<SharedMemoryImports::Mapping>* SharedMemoryImports::of(uint64_t handle_hash) const {
  auto it = imports_.find(handle_hash);
  return it == imports_.end() ? nullptr : &it->second;
}

std::vector<report::Finding> shared_memory_findings(const ProcessTrace& exporter, const SharedMemoryImports& imports,
                                                    StackResolver& stacks) {
  std::vector<report::Finding> findings;
  if (imports.empty()) return findings;
  for (const SharedMemoryFact& s : exporter.shared_memory) {
    if (s.role != trace::SharedRole::Export) continue;
    const auto* mappings = imports.of(s.handle_hash);
    if (!mappings) continue;
    const Event* release = release_after(exporter, s.pointer, s.seq);
    if (!release) continue;
    const uint64_t released_ns = release->time_ns;
    for (const auto& m : *mappings) {
      if (m.pid == exporter.pid) continue;
      const uint64_t until = m.closed_ns ? m.closed_ns : m.end_ns;
      if (m.opened_ns > released_ns || until <= released_ns) continue;
      const MemoryEvent& r = release->memory();
      report::Finding f;
      f.kind = report::FindingKind::FreedWhileImported;
      f.severity = report::Severity::Warning;
      f.api = std::string(api_info(r.api).name);
      f.pid = exporter.pid;
      f.count = 1;
      f.address = r.key;
      if (r.device >= 0) f.device = r.device;
      f.headline =
          fmt::format("Memory shared with process {} released with {} while that process still had it open, at:", m.pid,
                      api_info(r.api).name);
      f.message = fmt::format("{} released memory this process had exported; process {} had opened it with {} and {}",
                              f.api, m.pid, api_info(m.api).name,
                              m.closed_ns ? fmt::format("closed it {:.3f} s later", seconds(m.closed_ns, released_ns))
                                          : std::string("never closed it"));
      f.notes.push_back(fmt::format(
          "process {} opened it {:.3f} s before this release and {}", m.pid, seconds(released_ns, m.opened_ns),
          m.closed_ns ? fmt::format("closed it {:.3f} s after", seconds(m.closed_ns, released_ns))
                      : std::string("never closed it")));
      f.stack = stacks.user_stack(release->stack_id);
      findings.push_back(std::move(f));
    }
  }
  return findings;
}

}  // namespace cuaudit
