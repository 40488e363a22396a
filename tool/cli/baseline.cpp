#include "baseline.h"

#include <map>
#include <set>

#include "fingerprint.h"

namespace cuaudit {

void apply_baseline(const std::string& baseline_file, const report::Report& baseline, report::Report& report) {
  std::map<std::string, const report::Finding*> before;
  for (const report::Finding& f : baseline.findings) before.emplace(report::finding_fingerprint(f), &f);
  report::BaselineResult result;
  result.file = baseline_file;
  std::set<std::string> seen;
  for (report::Finding& f : report.findings) {
    const std::string key = report::finding_fingerprint(f);
    seen.insert(key);
    f.baseline = before.count(key) ? report::BaselineStatus::StillPresent : report::BaselineStatus::New;
    if (f.suppressed) continue;
    (f.baseline == report::BaselineStatus::New ? result.new_findings : result.still_present)++;
  }
  for (const auto& [key, f] : before) {
    if (!seen.count(key)) result.fixed.push_back(report::describe_finding(*f));
  }
  report.baseline = std::move(result);
  report.summary = report::summarize(report.findings);
}

}  // namespace cuaudit
