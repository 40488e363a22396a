#include "baseline.h"

#include <map>

#include <fmt/format.h>

#include "fingerprint.h"
#include "json_report.h"

namespace cuaudit {

BaselineComparison compare_with_baseline(const nlohmann::json& baseline, const nlohmann::json& report) {
  std::map<std::string, const nlohmann::json*> before;
  for (const auto& f : baseline.at("findings")) before.emplace(finding_fingerprint(f), &f);
  BaselineComparison out;
  std::map<std::string, bool> seen;
  for (const auto& f : report.at("findings")) {
    const std::string key = finding_fingerprint(f);
    const bool known = before.count(key) > 0;
    out.status.push_back(known ? "still_present" : "new");
    seen[key] = true;
  }
  for (const auto& [key, f] : before) {
    if (!seen.count(key)) out.fixed.push_back(*f);
  }
  return out;
}

void apply_baseline(const std::string& baseline_file, const nlohmann::json& baseline, report::Report& report) {
  const nlohmann::json now = nlohmann::json::parse(report::render_json(report));
  const BaselineComparison c = compare_with_baseline(baseline, now);
  report::BaselineResult result;
  result.file = baseline_file;
  for (size_t i = 0; i < report.findings.size(); ++i) {
    report.findings[i].baseline = c.status[i];
    if (report.findings[i].suppressed) continue;
    (c.status[i] == "new" ? result.new_findings : result.still_present)++;
  }
  for (const auto& f : c.fixed) result.fixed.push_back(describe_finding(f));
  report.baseline = result;
  report.summary = report::summarize(report.findings);
}

std::string render_baseline_diff(const nlohmann::json& report, const BaselineComparison& c) {
  std::string news, still;
  size_t new_count = 0, still_count = 0;
  const auto& findings = report.at("findings");
  for (size_t i = 0; i < findings.size(); ++i) {
    if (findings[i].value("suppressed", false)) continue;
    const std::string line = fmt::format("==cuaudit diff==   {}\n", describe_finding(findings[i]));
    if (c.status[i] == "new") {
      news += line, ++new_count;
    } else {
      still += line, ++still_count;
    }
  }
  std::string out = fmt::format("==cuaudit diff== {} new finding(s):\n{}", new_count, news);
  out += fmt::format("==cuaudit diff== {} still present:\n{}", still_count, still);
  out += fmt::format("==cuaudit diff== {} fixed:\n", c.fixed.size());
  for (const auto& f : c.fixed) out += fmt::format("==cuaudit diff==   {}\n", describe_finding(f));
  return out;
}

}  // namespace cuaudit
