#include "report_model.h"

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
