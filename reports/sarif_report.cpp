#include "sarif_report.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "fingerprint.h"

namespace cuaudit::report {
namespace {

using nlohmann::json;

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
  // Every kind a report can hold, in declaration order, so that rule indices are stable across runs.
  json rules = json::array();
  for (const FindingKindInfo& k : kFindingKinds) {
    rules.push_back({{"id", k.key},
                     {"name", k.sarif_name},
                     {"shortDescription", {{"text", k.description}}},
                     {"fullDescription", {{"text", k.description}}}});
  }
  json results = json::array();
  for (const Finding& f : report.findings) {
    json result = {{"ruleId", finding_kind_key(f.kind)},
                   {"ruleIndex", static_cast<size_t>(f.kind)},
                   {"level", level(f.severity)},
                   {"message", {{"text", f.message.empty() ? f.headline : f.message}}},
                   {"locations", location_of(f, source_root)},
                   {"partialFingerprints",
                    {{"cuauditFingerprint/v2", fmt::format("{:016x}", stable_hash(finding_fingerprint(f)))}}}};
    if (f.suppressed) result["suppressions"] = json::array({{{"kind", "external"}}});
    if (f.device) {
      json device = {{"ordinal", *f.device}};
      for (const Process& p : report.processes) {
        for (const DeviceDescription& d : p.devices) {
          if (p.pid == f.pid && d.ordinal == *f.device && !d.name.empty()) device["name"] = d.name;
        }
      }
      result["properties"] = {{"device", device}};
    }
    results.push_back(std::move(result));
  }
  json run = {{"tool", {{"driver", {{"name", "cuaudit"}, {"version", report.tool_version}, {"rules", rules}}}}},
              {"results", results}};
  if (!source_root.empty()) {
    const std::string root = source_root.back() == '/' ? source_root : source_root + "/";
    run["originalUriBaseIds"] = {{"%SRCROOT%", {{"uri", file_uri(root)}}}};
  }
  const json doc = {
      {"$schema", "https://json.schemastore.org/sarif-2.1.0.json"}, {"version", "2.1.0"}, {"runs", json::array({run})}};
  // Invalid UTF-8 from the target (a path, a kernel name) is replaced rather than failing the report.
  return doc.dump(2, ' ', false, json::error_handler_t::replace) + "\n";
}

}  // namespace cuaudit::report
