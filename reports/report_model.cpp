#include "report_model.h"

#include <fmt/format.h>

namespace cuaudit::report {

const char* severity_name(Severity s) {
  switch (s) {
    case Severity::Error:
      return "error";
    case Severity::Warning:
      return "warning";
    case Severity::Info:
      return "info";
  }
  return "error";
}

std::string human_bytes(uint64_t bytes) {
  const double b = static_cast<double>(bytes);
  if (bytes >= (uint64_t{1} << 30)) return fmt::format("{:.1f} GiB", b / (1 << 30));
  if (bytes >= (uint64_t{1} << 20)) return fmt::format("{:.1f} MiB", b / (1 << 20));
  if (bytes >= (uint64_t{1} << 10)) return fmt::format("{:.1f} KiB", b / (1 << 10));
  return fmt::format("{} B", bytes);
}

Summary summarize(const std::vector<Finding>& findings) { return summarize_process(findings, 0); }

// pid 0: every process.
Summary summarize_process(const std::vector<Finding>& findings, uint64_t pid) {
  Summary s;
  for (const Finding& f : findings) {
    if (f.suppressed || (pid != 0 && f.pid != pid)) continue;
    ++s.findings;
    if (f.severity == Severity::Error && f.baseline != "still_present") ++s.error_findings;
    if (f.kind == "leak") {
      s.leaked_bytes += f.bytes;
      s.leaked_allocations += f.count;
    }
  }
  return s;
}

}  // namespace cuaudit::report
