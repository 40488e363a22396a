#include "merge.h"

#include "fingerprint.h"

#include <sys/stat.h>

#include <fstream>
#include <map>
#include <stdexcept>

#include <fmt/format.h>

namespace cuaudit {

using nlohmann::json;

json read_json_report(const std::string& input) {
  struct stat st;
  const std::string path = stat(input.c_str(), &st) == 0 && S_ISDIR(st.st_mode) ? input + "/report.json" : input;
  std::ifstream in(path);
  if (!in) throw std::runtime_error(fmt::format("cannot read {} (give JSON reports or --output directories)", path));
  json doc;
  try {
    doc = json::parse(in);
  } catch (const std::exception& e) {
    throw std::runtime_error(fmt::format("{} is not JSON: {}", path, e.what()));
  }
  if (doc.value("schema", "") != "cuaudit.report.v1") {
    throw std::runtime_error(fmt::format("{} is not a cuaudit report (schema cuaudit.report.v1)", path));
  }
  return doc;
}

json merge_reports(const std::vector<std::string>& inputs) {
  json processes = json::array();
  json findings = json::array();
  std::map<std::string, size_t> index;  // fingerprint -> position in findings
  json sources = json::array();
  for (size_t rank = 0; rank < inputs.size(); ++rank) {
    const json doc = read_json_report(inputs[rank]);
    sources.push_back(inputs[rank]);
    for (json p : doc.at("processes")) {
      p["rank"] = rank;
      processes.push_back(std::move(p));
    }
    for (const json& f : doc.at("findings")) {
      const std::string key = finding_fingerprint(f);
      auto it = index.find(key);
      if (it == index.end()) {
        json merged = f;
        merged["ranks"] = json::array({rank});
        merged["pids"] = json::array({f.value("pid", 0)});
        index.emplace(key, findings.size());
        findings.push_back(std::move(merged));
        continue;
      }
      json& merged = findings[it->second];
      merged["count"] = merged.value("count", 0ull) + f.value("count", 0ull);
      merged["bytes"] = merged.value("bytes", 0ull) + f.value("bytes", 0ull);
      if (merged["ranks"].back() != rank) merged["ranks"].push_back(rank);
      merged["pids"].push_back(f.value("pid", 0));
    }
  }
  uint64_t leaked_bytes = 0, leaked_allocations = 0, count = 0, errors = 0;
  for (const json& f : findings) {
    if (f.value("suppressed", false)) continue;
    ++count;
    errors += f.value("severity", "") == "error";
    if (f.value("kind", "") == "leak") {
      leaked_bytes += f.value("bytes", 0ull);
      leaked_allocations += f.value("count", 0ull);
    }
  }
  return {{"schema", "cuaudit.report.v1"},
          {"tool", {{"name", "cuaudit"}, {"version", CUAUDIT_VERSION}}},
          {"merged_from", sources},
          {"processes", processes},
          {"findings", findings},
          {"summary",
           {{"leaked_bytes", leaked_bytes}, {"leaked_allocations", leaked_allocations}, {"findings", count},
            {"errors", errors}}},
          {"notes", json::array()},
          {"nothing_tracked", processes.empty()}};
}

std::string render_merged_text(const json& merged) {
  std::string out = fmt::format("==cuaudit merge== {} report(s), {} process(es)\n", merged["merged_from"].size(),
                                merged["processes"].size());
  for (const json& f : merged["findings"]) {
    if (f.value("suppressed", false)) continue;
    std::string ranks;
    for (const auto& r : f["ranks"]) ranks += (ranks.empty() ? "" : ",") + std::to_string(r.get<size_t>());
    std::string where = "(no stack)";
    if (!f["stack"].empty()) {
      const json& top = f["stack"][0];
      where = fmt::format("{} {}:{}", top.value("function", json("??")).is_string() ? top["function"].get<std::string>() : "??",
                          top["file"].is_string() ? top["file"].get<std::string>() : "??",
                          top["line"].is_number() ? std::to_string(top["line"].get<int>()) : "?");
    }
    out += fmt::format("==cuaudit merge== {} ({}) {}: {} byte(s) in {} occurrence(s) at {}; ranks {}\n",
                       f.value("kind", ""), f.value("severity", ""), f.value("api", ""), f.value("bytes", 0ull),
                       f.value("count", 0ull), where, ranks);
  }
  const json& s = merged["summary"];
  out += fmt::format("==cuaudit merge== SUMMARY: {} byte(s) leaked in {} allocation(s); {} finding(s), {} error(s)\n",
                     s["leaked_bytes"].get<uint64_t>(), s["leaked_allocations"].get<uint64_t>(),
                     s["findings"].get<uint64_t>(), s["errors"].get<uint64_t>());
  return out;
}

}  // namespace cuaudit
