#include "json_report.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

namespace cuaudit::report {
namespace {

using nlohmann::json;

json optional_int(const std::optional<int>& v) { return v ? json(*v) : json(nullptr); }

json frame_json(const Frame& f) {
  return {{"function", f.function.empty() ? json(nullptr) : json(f.function)},
          {"file", f.file.empty() ? json(nullptr) : json(f.file)},
          {"line", f.line > 0 ? json(f.line) : json(nullptr)},
          {"module", f.module.empty() ? json(nullptr) : json(f.module)},
          {"pc", fmt::format("0x{:x}", f.pc)}};
}

// {"device": 3221225472, "stream_ordered": 1048576}
json families_json(const std::vector<std::pair<std::string, uint64_t>>& families) {
  json out = json::object();
  for (const auto& [family, bytes] : families) out[family] = bytes;
  return out;
}

json stack_json(const std::vector<Frame>& frames) {
  json stack = json::array();
  for (const Frame& frame : frames) stack.push_back(frame_json(frame));
  return stack;
}

}  // namespace

json finding_to_json(const Finding& f) {
  json related = json::array();
  for (const RelatedStack& r : f.related) {
    related.push_back({{"role", r.role}, {"api", r.api}, {"title", r.title}, {"stack", stack_json(r.stack)}});
  }
  json parameter = nullptr;
  if (f.parameter) {
    const KernelParameter& p = *f.parameter;
    parameter = {{"kernel", p.kernel},
                 {"index", p.index},
                 {"type", p.type.empty() ? json(nullptr) : json(p.type)},
                 {"alignment", p.alignment ? json(p.alignment) : json(nullptr)},
                 {"offset", p.offset ? json(*p.offset) : json(nullptr)}};
  }
  return {{"kind", f.kind},
          {"severity", severity_name(f.severity)},
          {"api", f.api},
          {"bytes", f.bytes},
          {"count", f.count},
          {"pid", f.pid},
          {"device", optional_int(f.device)},
          {"message", f.message},
          {"notes", f.notes},
          {"address", f.address ? json(fmt::format("0x{:x}", *f.address)) : json(nullptr)},
          {"result", f.result.empty() ? json(nullptr) : json(f.result)},
          {"suppressed", f.suppressed},
          {"baseline", f.baseline.empty() ? json(nullptr) : json(f.baseline)},
          {"stack", stack_json(f.stack)},
          {"related", related},
          {"parameter", parameter}};
}

std::string render_json(const Report& report) {
  json processes = json::array();
  for (const Process& p : report.processes) {
    processes.push_back({{"pid", p.pid},
                         {"parent_pid", p.parent_pid},
                         {"command", p.command},
                         {"exit_code", optional_int(p.exit_code)},
                         {"signal", p.signal ? json(*p.signal) : json(nullptr)},
                         {"tracked", p.tracked},
                         {"allocations", p.allocations},
                         {"releases", p.releases},
                         {"notes", p.notes}});
  }
  json findings = json::array();
  for (const Finding& f : report.findings) findings.push_back(finding_to_json(f));
  json suppressions = json::array();
  for (const SuppressionUse& u : report.suppressions) {
    suppressions.push_back({{"rule", u.rule}, {"file", u.file}, {"line", u.line}, {"hits", u.hits}, {"bytes", u.bytes}});
  }
  json samples = json::array();
  for (const TimelineSample& t : report.timeline.samples) {
    samples.push_back({{"t", t.t}, {"pid", t.pid}, {"device", t.device}, {"used", t.used}, {"free", t.free},
                       {"tracked", t.tracked}, {"families", families_json(t.families)}});
  }
  json peaks = json::array();
  for (const DevicePeak& p : report.timeline.peaks) {
    json sites = json::array();
    for (const PeakSite& site : p.sites) {
      sites.push_back({{"api", site.api}, {"bytes", site.bytes}, {"count", site.count}, {"stack", stack_json(site.stack)}});
    }
    peaks.push_back({{"pid", p.pid}, {"device", p.device}, {"t", p.t}, {"used", p.used}, {"tracked", p.tracked},
                     {"families", families_json(p.families)}, {"sites", sites}});
  }
  json doc = {{"schema", kSchema},
              {"tool", {{"name", "cuaudit"}, {"version", report.tool_version}}},
              {"processes", processes},
              {"findings", findings},
              {"summary",
               {{"leaked_bytes", report.summary.leaked_bytes},
                {"leaked_allocations", report.summary.leaked_allocations},
                {"findings", report.summary.findings},
                {"errors", report.summary.error_findings}}},
              {"notes", report.notes},
              {"suppressions", suppressions},
              {"baseline", report.baseline ? json{{"file", report.baseline->file},
                                                  {"new", report.baseline->new_findings},
                                                  {"still_present", report.baseline->still_present},
                                                  {"fixed", report.baseline->fixed}}
                                           : json(nullptr)},
              {"nothing_tracked", report.nothing_tracked},
              {"timeline", {{"samples", samples}, {"peaks", peaks}}}};
  return doc.dump(2) + "\n";
}

}  // namespace cuaudit::report
