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

std::optional<Severity> severity_from_name(std::string_view name) {
  for (Severity s : {Severity::Error, Severity::Warning, Severity::Info}) {
    if (name == severity_name(s)) return s;
  }
  return std::nullopt;
}

std::optional<FindingKind> finding_kind_from_key(std::string_view key) {
  for (const FindingKindInfo& k : kFindingKinds) {
    if (key == k.key) return k.kind;
  }
  return std::nullopt;
}

namespace {
constexpr RelatedRole kRoles[] = {RelatedRole::Allocation, RelatedRole::FirstRelease, RelatedRole::Release,
                                  RelatedRole::Python, RelatedRole::Holder};
}  // namespace

const char* related_role_key(RelatedRole r) {
  switch (r) {
    case RelatedRole::Allocation:
      return "allocation";
    case RelatedRole::FirstRelease:
      return "first_release";
    case RelatedRole::Release:
      return "release";
    case RelatedRole::Python:
      return "python";
    case RelatedRole::Holder:
      return "holder";
  }
  return "allocation";
}

std::optional<RelatedRole> related_role_from_key(std::string_view key) {
  for (RelatedRole r : kRoles) {
    if (key == related_role_key(r)) return r;
  }
  return std::nullopt;
}

const char* baseline_status_key(BaselineStatus b) {
  switch (b) {
    case BaselineStatus::None:
      return nullptr;
    case BaselineStatus::New:
      return "new";
    case BaselineStatus::StillPresent:
      return "still_present";
  }
  return nullptr;
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
    if (f.severity == Severity::Error && f.baseline != BaselineStatus::StillPresent) ++s.error_findings;
    if (counts_as_leak(f.kind)) {
      s.leaked_bytes = saturating_add(s.leaked_bytes, f.bytes);
      s.leaked_allocations = saturating_add(s.leaked_allocations, f.count);
    }
  }
  return s;
}

}  // namespace cuaudit::report
