#include "merge.h"

#include <sys/stat.h>

#include <fstream>
#include <map>
#include <stdexcept>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "fingerprint.h"
#include "json_report.h"
#include "safe_file.h"

#ifndef CUAUDIT_VERSION
#define CUAUDIT_VERSION "unknown"
#endif

namespace cuaudit {

report::Report read_report_file(const std::string& input) {
  struct stat st;
  const std::string path = stat(input.c_str(), &st) == 0 && S_ISDIR(st.st_mode) ? input + "/report.json" : input;
  std::string text, error;
  if (!read_regular_file(path, size_t{1} << 30, text, error)) {
    throw std::runtime_error(fmt::format("{} (give JSON reports or --output directories)", error));
  }
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(text);
  } catch (const std::exception& e) {
    throw std::runtime_error(fmt::format("{} is not JSON: {}", path, e.what()));
  }
  try {
    return report::report_from_json(doc);
  } catch (const report::ReportFormatError& e) {
    throw std::runtime_error(fmt::format("{} is not a cuaudit report: {}", path, e.what()));
  }
}

report::Report merge_reports(const std::vector<report::Report>& reports, const std::vector<std::string>& names) {
  report::Report merged;
  merged.tool_version = CUAUDIT_VERSION;
  merged.merged_from = names;
  std::map<std::string, size_t> index;  // fingerprint -> position in merged.findings
  for (size_t rank = 0; rank < reports.size(); ++rank) {
    const int r = static_cast<int>(rank);
    for (report::Process p : reports[rank].processes) {
      p.rank = r;
      merged.processes.push_back(std::move(p));
    }
    for (const report::Finding& f : reports[rank].findings) {
      const std::string key = report::finding_fingerprint(f);
      auto it = index.find(key);
      if (it == index.end()) {
        report::Finding first = f;
        first.ranks = {r};
        first.pids = {f.pid};
        index.emplace(key, merged.findings.size());
        merged.findings.push_back(std::move(first));
        continue;
      }
      report::Finding& same = merged.findings[it->second];
      same.count = report::saturating_add(same.count, f.count);
      same.bytes = report::saturating_add(same.bytes, f.bytes);
      if (same.device != f.device) same.device.reset();  // the same bug on several devices: none names them all
      if (same.ranks.back() != r) same.ranks.push_back(r);
      same.pids.push_back(f.pid);
    }
    for (const std::string& note : reports[rank].notes) merged.notes.push_back(fmt::format("rank {}: {}", rank, note));
    if (reports[rank].incomplete) {
      merged.incomplete = true;  // a rank's damage is the merged report's: never a clean merge
      merged.notes.push_back(fmt::format("rank {} ({}): its report is incomplete (see its notes)", rank,
                                         rank < names.size() ? names[rank] : std::string("?")));
    }
    const report::Timeline& t = reports[rank].timeline;
    merged.timeline.samples.insert(merged.timeline.samples.end(), t.samples.begin(), t.samples.end());
    merged.timeline.peaks.insert(merged.timeline.peaks.end(), t.peaks.begin(), t.peaks.end());
    merged.timeline.site_series.insert(merged.timeline.site_series.end(), t.site_series.begin(), t.site_series.end());
  }
  merged.nothing_tracked = merged.processes.empty();
  merged.summary = report::summarize(merged.findings);
  return merged;
}

}  // namespace cuaudit
