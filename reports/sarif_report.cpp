#include "sarif_report.h"

#include <functional>
#include <map>

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "fingerprint.h"
#include "json_report.h"

namespace cuaudit::report {
namespace {

using nlohmann::json;

struct RuleText {
  const char* name;
  const char* description;
};

// Every kind a report can hold, so that rule indices are stable across runs.
const std::map<std::string, RuleText>& rule_texts() {
  static const std::map<std::string, RuleText> rules = {
      {"leak", {"CudaMemoryLeak", "CUDA memory allocated and never released"}},
      {"held_by_allocator", {"HeldByAllocator", "Memory a framework's allocator holds on purpose until the process ends"}},
      {"mismatched_free", {"MismatchedFree", "Memory released through an API of another family"}},
      {"double_free", {"DoubleFree", "Memory released again after it was released"}},
      {"invalid_free", {"InvalidFree", "A release of a pointer no CUDA allocator returned"}},
      {"misaligned_param", {"MisalignedKernelParameter", "A kernel parameter not aligned for its pointee type"}},
      {"stale_pointer_param", {"StalePointerParameter", "A kernel parameter pointing into released memory"}},
      {"host_pointer_param", {"HostPointerParameter", "A kernel parameter pointing into pageable host memory"}},
      {"unchecked_error", {"UncheckedCudaError", "A CUDA call's error that the program never looked at"}},
      {"api_error", {"HandledCudaError", "A failing CUDA call that the program handled"}},
      {"growth", {"MemoryGrowth", "Memory held at exit that kept being allocated until the end, by one Python line"}},
  };
  return rules;
}

// SARIF's levels are cuaudit's severities, except that info is "note".
const char* level(Severity s) { return s == Severity::Info ? "note" : severity_name(s); }

std::string file_uri(const std::string& path) { return "file://" + path; }

// The first frame with a source file: relative to the root when under it.
json location_of(const Finding& f, const std::string& root) {
  for (const Frame& frame : f.stack) {
    if (frame.file.empty()) continue;
    json artifact;
    const std::string prefix = root.empty() || root.back() == '/' ? root : root + "/";
    if (!prefix.empty() && frame.file.compare(0, prefix.size(), prefix) == 0) {
      artifact = {{"uri", frame.file.substr(prefix.size())}, {"uriBaseId", "%SRCROOT%"}};
    } else {
      artifact = {{"uri", frame.file[0] == '/' ? file_uri(frame.file) : frame.file}};
    }
    json physical = {{"artifactLocation", artifact}};
    if (frame.line > 0) physical["region"] = {{"startLine", frame.line}};
    return json::array({{{"physicalLocation", physical}}});
  }
  return json::array();
}

}  // namespace

std::string render_sarif(const Report& report, const std::string& source_root) {
  json rules = json::array();
  std::map<std::string, size_t> rule_index;
  for (const auto& [id, text] : rule_texts()) {
    rule_index[id] = rules.size();
    rules.push_back({{"id", id},
                     {"name", text.name},
                     {"shortDescription", {{"text", text.description}}},
                     {"fullDescription", {{"text", text.description}}}});
  }
  json results = json::array();
  for (const Finding& f : report.findings) {
    json result = {{"ruleId", f.kind},
                   {"level", level(f.severity)},
                   {"message", {{"text", f.message.empty() ? f.headline : f.message}}},
                   {"locations", location_of(f, source_root)},
                   {"partialFingerprints",
                    {{"cuauditFingerprint/v1",
                      fmt::format("{:016x}", std::hash<std::string>{}(finding_fingerprint(finding_to_json(f))))}}}};
    if (auto it = rule_index.find(f.kind); it != rule_index.end()) result["ruleIndex"] = it->second;
    if (f.suppressed) result["suppressions"] = json::array({{{"kind", "external"}}});
    results.push_back(std::move(result));
  }
  json run = {{"tool", {{"driver", {{"name", "cuaudit"}, {"version", report.tool_version}, {"rules", rules}}}}},
              {"results", results}};
  if (!source_root.empty()) {
    const std::string root = source_root.back() == '/' ? source_root : source_root + "/";
    run["originalUriBaseIds"] = {{"%SRCROOT%", {{"uri", file_uri(root)}}}};
  }
  const json doc = {{"$schema", "https://json.schemastore.org/sarif-2.1.0.json"}, {"version", "2.1.0"},
                    {"runs", json::array({run})}};
  return doc.dump(2) + "\n";
}

}  // namespace cuaudit::report
