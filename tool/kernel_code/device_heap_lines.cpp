#include "device_heap_lines.h"

#include <fmt/format.h>

#include <set>

#include "cubin_functions.h"
#include "cubin_lines.h"
#include "run_dir.h"
#include "safe_file.h"

namespace cuaudit {

void add_device_heap_lines(const std::string& run_dir, ProcessTrace& trace) {
  std::set<std::pair<std::string, uint64_t>> wanted;  // (kernel, offset)
  for (const DeviceHeapCallFact& call : trace.device_heap_calls) {
    const auto l = trace.device_heap_launches.find(call.launch_id);
    if (l == trace.device_heap_launches.end()) continue;
    if (const std::optional<uint64_t> offset = l->second.code_offset(call.pc)) wanted.emplace(l->second.name, *offset);
  }
  // Each kept cubin read once, until every place has its line (the first cubin whose line table
  // has the kernel: its module was loaded before the launch).
  for (const ModuleCodeFact& module : trace.module_code) {
    if (wanted.empty()) break;
    if (module.status != trace::ModuleCodeStatus::Saved) continue;
    std::string image, error;
    if (!read_regular_file(kept_module_code(run_dir, module.hash, false), kMaxCubinBytes, image, error, Links::Refuse))
      continue;
    const auto lines = cubin_lines(image);
    for (auto it = wanted.begin(); it != wanted.end();) {
      const auto rows = lines.find(it->first);
      if (rows == lines.end()) {
        ++it;
        continue;
      }
      if (const std::optional<LineRow> row = line_at(rows->second, it->second); row && row->line)
        trace.device_heap_lines[*it] = fmt::format("{}:{}", row->file, row->line);
      it = wanted.erase(it);
    }
  }
}

}  // namespace cuaudit
