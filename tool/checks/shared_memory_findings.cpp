#include "shared_memory_findings.h"

#include <algorithm>

#include <fmt/format.h>

namespace cuaudit {
namespace {

double seconds(uint64_t later, uint64_t earlier) {
  return later > earlier ? static_cast<double>(later - earlier) / 1e9 : 0.0;
}

}  // namespace

SharedMemoryObserver::SharedMemoryObserver(const ProcessTrace& trace) {
  use_.pid = trace.pid;
  for (const SharedMemoryFact& s : trace.shared_memory) {
    const bool import = s.role == trace::SharedRole::Import;
    const size_t index = import ? use_.imports.size() : use_.exports.size();
    if (import) {
      use_.imports.push_back({s, Api::Count, 0});
      import_by_seq_.emplace(s.seq, index);
    } else {
      use_.exports.push_back({s, {}});
    }
    waiting_.emplace(s.pointer, std::make_pair(index, import));
  }
}

void SharedMemoryObserver::on_event(const Event& e) {
  use_.end_ns = std::max(use_.end_ns, e.time_ns);
  if (waiting_.empty() && import_by_seq_.empty()) return;
  if (e.kind == EventKind::Alloc) {
    auto [first, last] = import_by_seq_.equal_range(e.seq);
    for (auto it = first; it != last; ++it) use_.imports[it->second].api = e.memory().api;
    return;
  }
  if (e.kind != EventKind::Free || e.memory().result != 0) return;
  // The first successful release of the pointer after the fact closes an import, releases an export.
  auto [first, last] = waiting_.equal_range(e.memory().key);
  for (auto it = first; it != last;) {
    const auto [index, import] = it->second;
    const SharedMemoryFact& fact = import ? use_.imports[index].fact : use_.exports[index].fact;
    if (fact.seq >= e.seq) {
      ++it;
      continue;
    }
    if (import) {
      use_.imports[index].closed_ns = e.time_ns;
    } else {
      use_.exports[index].release = e.memory();
    }
    it = waiting_.erase(it);
  }
}

SharedMemoryUse shared_memory_use(const ProcessTrace& trace) {
  SharedMemoryObserver observer(trace);
  replay(trace, &observer);
  return observer.use();
}

SharedMemoryImports::SharedMemoryImports(const std::vector<SharedMemoryUse>& processes) {
  for (const SharedMemoryUse& p : processes) {
    for (const SharedMemoryUse::Import& i : p.imports) {
      if (i.api == Api::Count) continue;  // its allocation was never seen
      Mapping m;
      m.pid = p.pid;
      m.api = i.api;
      m.opened_ns = i.fact.time_ns;
      m.closed_ns = i.closed_ns;
      m.end_ns = p.end_ns ? p.end_ns : i.fact.time_ns;
      imports_[i.fact.handle_hash].push_back(m);
    }
  }
}

const std::vector<SharedMemoryImports::Mapping>* SharedMemoryImports::of(uint64_t handle_hash) const {
  auto it = imports_.find(handle_hash);
  return it == imports_.end() ? nullptr : &it->second;
}

std::vector<report::Finding> shared_memory_findings(const SharedMemoryUse& exporter, const SharedMemoryImports& imports,
                                                    StackResolver& stacks) {
  std::vector<report::Finding> findings;
  if (imports.empty()) return findings;
  for (const SharedMemoryUse::Export& x : exporter.exports) {
    const auto* mappings = imports.of(x.fact.handle_hash);
    if (!mappings || !x.release) continue;
    const MemoryEvent& r = *x.release;
    const uint64_t released_ns = r.time_ns;
    for (const auto& m : *mappings) {
      if (m.pid == exporter.pid) continue;
      const uint64_t until = m.closed_ns ? m.closed_ns : m.end_ns;
      if (m.opened_ns > released_ns || until <= released_ns) continue;
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
      f.stack = stacks.user_stack(r.stack_id);
      findings.push_back(std::move(f));
    }
  }
  return findings;
}

}  // namespace cuaudit
