#include "sarif_report.h"

#include <optional>

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "fingerprint.h"
#include "text_helpers.h"

namespace cuaudit::report {
namespace {

using nlohmann::json;

// SARIF's levels are cuaudit's severities, except that info is "note".
const char* level(Severity s) { return s == Severity::Info ? "note" : severity_name(s); }

std::string file_uri(const std::string& path) { return "file://" + path; }

// A frame's file: relative to the root (base id %SRCROOT%) when under it, else as recorded.
json artifact_of(const std::string& file, const std::string& root) {
  const std::string prefix = root.empty() || root.back() == '/' ? root : root + "/";
  if (!prefix.empty() && file.compare(0, prefix.size(), prefix) == 0)
    return {{"uri", file.substr(prefix.size())}, {"uriBaseId", "%SRCROOT%"}};
  return {{"uri", file[0] == '/' ? file_uri(file) : file}};
}

json physical_location(const Frame& frame, const std::string& root) {
  json physical = {{"artifactLocation", artifact_of(frame.file, root)}};
  if (frame.line > 0) physical["region"] = {{"startLine", frame.line}};
  return physical;
}

// The first frame with a source file, where code scanning shows the result.
const Frame* first_source_frame(const std::vector<Frame>& stack) {
  for (const Frame& frame : stack) {
    if (!frame.file.empty()) return &frame;
  }
  return nullptr;
}

// A whole stack as SARIF's `stack`: every frame, with its function as the logical location.
json sarif_stack(const std::string& message, const std::vector<Frame>& stack, const std::string& root) {
  json frames = json::array();
  for (const Frame& frame : stack) {
    json location = json::object();
    if (!frame.file.empty()) location["physicalLocation"] = physical_location(frame, root);
    if (!frame.function.empty()) location["logicalLocations"] = json::array({{{"fullyQualifiedName", frame.function}}});
    if (location.empty()) location["message"] = {{"text", frame.module.empty() ? std::string("??") : frame.module}};
    frames.push_back({{"location", location}});
  }
  return {{"message", {{"text", message}}}, {"frames", frames}};
}

// One finding as a SARIF result (none for a note without a place in the code: code scanning shows
// results at a place, a note with none would only be noise there).
std::optional<json> sarif_result(const Report& report, const Finding& f, const std::string& source_root) {
  const Frame* at = first_source_frame(f.stack);
  if (!at && f.severity == Severity::Info) return std::nullopt;
  const std::string text = f.message.empty() ? f.headline : f.message;
  json result = {
      {"ruleId", finding_kind_key(f.kind)},
      {"ruleIndex", static_cast<size_t>(f.kind)},
      {"level", level(f.severity)},
      {"message", {{"text", text}}},
      {"locations", at ? json::array({{{"physicalLocation", physical_location(*at, source_root)}}}) : json::array()},
      {"partialFingerprints",
       {{"cuauditFingerprint/v2", fmt::format("{:016x}", stable_hash(finding_fingerprint(f)))}}}};
  json stacks = json::array();
  json related = json::array();
  if (!f.stack.empty()) stacks.push_back(sarif_stack(f.headline.empty() ? text : f.headline, f.stack, source_root));
  for (const RelatedStack& r : f.related) {
    stacks.push_back(sarif_stack(r.title, r.stack, source_root));
    if (const Frame* where = first_source_frame(r.stack)) {
      related.push_back({{"id", related.size() + 1},
                         {"message", {{"text", r.title}}},
                         {"physicalLocation", physical_location(*where, source_root)}});
    }
  }
  if (!stacks.empty()) result["stacks"] = stacks;
  if (!related.empty()) result["relatedLocations"] = related;
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
  return result;
}

// The program's run: its command line and how it ended, and whether the analysis saw all of it.
json sarif_invocation(const Report& report) {
  const Process& root = report.processes.front();
  json invocation = {{"executionSuccessful", !report.nothing_tracked && !report.incomplete}};
  if (!root.command.empty()) {
    invocation["commandLine"] = join_words(root.command);
    invocation["arguments"] = root.command;
  }
  if (root.exit_code) invocation["exitCode"] = *root.exit_code;
  if (root.signal) invocation["exitSignalName"] = *root.signal;
  json notifications = json::array();
  for (const std::string& note : report.notes)
    notifications.push_back({{"message", {{"text", note}}}, {"level", "note"}});
  if (!notifications.empty()) invocation["toolExecutionNotifications"] = notifications;
  return invocation;
}

}  // namespace

std::string render_sarif(const Report& report, const std::string& source_root) {
  // Every kind a report can hold, in declaration order, so that rule indices are stable across runs.
  json rules = json::array();
  for (const FindingKindInfo& k : kFindingKinds) {
    rules.push_back({{"id", k.key},
                     {"name", k.sarif_name},
                     {"shortDescription", {{"text", k.description}}},
                     {"fullDescription", {{"text", k.description}}},
                     {"help", {{"text", k.help}}},
                     {"defaultConfiguration", {{"level", level(k.severity)}}}});
  }
  json results = json::array();
  for (const Finding& f : report.findings) {
    if (std::optional<json> result = sarif_result(report, f, source_root)) results.push_back(std::move(*result));
  }
  json run = {{"tool", {{"driver", {{"name", "cuaudit"}, {"version", report.tool_version}, {"rules", rules}}}}},
              {"results", results}};
#ifdef CUAUDIT_HOMEPAGE_URL
  run["tool"]["driver"]["informationUri"] = CUAUDIT_HOMEPAGE_URL;
#endif
  if (!report.processes.empty()) run["invocations"] = json::array({sarif_invocation(report)});
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
