#include "trace_event_report.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include <nlohmann/json.hpp>

namespace cuaudit::report {
namespace {

using nlohmann::json;

// Trace events count time in microseconds.
double micros(double seconds) { return seconds * 1e6; }

std::string frame_text(const Frame& f) {
  std::string text = f.function.empty() ? "??" : f.function;
  if (!f.file.empty()) text += fmt::format(" {}:{}", f.file, f.line);
  return text;
}

// Each out-of-memory moment, where the allocation failed, with what filled the device.
void add_out_of_memory_moments(const Report& report, json& events) {
  for (const Finding& f : report.findings) {
    if (f.kind != FindingKind::OutOfMemory || !f.at || f.suppressed) continue;
    json args = {{"message", f.message}};
    if (f.out_of_memory) {
      args["requested"] = human_bytes(f.out_of_memory->requested);
      if (!f.out_of_memory->verdict.empty()) args["verdict"] = f.out_of_memory->verdict;
    }
    if (!f.stack.empty()) args["at"] = frame_text(f.stack.front());
    events.push_back({{"ph", "i"},
                      {"s", "p"},
                      {"name", fmt::format("out of memory ({})", f.api)},
                      {"pid", f.pid},
                      {"ts", micros(*f.at)},
                      {"args", args}});
  }
}

}  // namespace

std::string render_trace_events(const Report& report) {
  json events = json::array();
  // Each process a track, named as the text report names it; each device a thread of it.
  for (const Process& p : report.processes) {
    std::string name = p.command.empty() ? fmt::format("process {}", p.pid) : p.command.front();
    events.push_back({{"ph", "M"}, {"name", "process_name"}, {"pid", p.pid}, {"args", {{"name", name}}}});
  }
  for (const TimelineSample& s : report.timeline.samples) {
    const std::string device = fmt::format("device {}", s.device);
    events.push_back({{"ph", "C"},
                      {"name", device + " memory"},
                      {"pid", s.pid},
                      {"ts", micros(s.t)},
                      {"args", {{"in use (cuMemGetInfo)", s.used}, {"tracked allocations", s.tracked}}}});
    json families = json::object();
    for (const auto& [family, bytes] : s.families) families[family] = bytes;
    if (!families.empty())
      events.push_back({{"ph", "C"},
                        {"name", device + " tracked by family"},
                        {"pid", s.pid},
                        {"ts", micros(s.t)},
                        {"args", families}});
    if (s.pool_reserved)
      events.push_back({{"ph", "C"},
                        {"name", device + " stream-ordered pool"},
                        {"pid", s.pid},
                        {"ts", micros(s.t)},
                        {"args", {{"reserved", *s.pool_reserved}, {"used", s.pool_used.value_or(0)}}}});
  }
  for (const DevicePeak& peak : report.timeline.peaks) {
    json sites = json::array();
    for (const PeakSite& site : peak.sites) {
      sites.push_back(fmt::format("{} in {} allocation(s) ({}) at {}", human_bytes(site.bytes), site.count, site.api,
                                  site.stack.empty() ? std::string("??") : frame_text(site.stack.front())));
    }
    events.push_back(
        {{"ph", "i"},
         {"s", "p"},
         {"name", fmt::format("peak of device {}", peak.device)},
         {"pid", peak.pid},
         {"ts", micros(peak.t)},
         {"args", {{"in use", human_bytes(peak.used)}, {"tracked", human_bytes(peak.tracked)}, {"sites", sites}}}});
  }
  add_out_of_memory_moments(report, events);
  // Each allocation's life as an async slice on its process's "allocations on device N" track,
  // from its allocation to its release; one never released lasts to the process's last moment.
  std::map<uint64_t, double> process_end;
  for (const TimelineSample& s : report.timeline.samples) process_end[s.pid] = std::max(process_end[s.pid], s.t);
  for (const AllocationSpan& a : report.allocation_spans) {
    process_end[a.pid] = std::max(process_end[a.pid], a.end.value_or(a.begin));
  }
  uint64_t id = 0;
  for (const AllocationSpan& a : report.allocation_spans) {
    const std::string name = fmt::format("{} {}{}", a.api, human_bytes(a.bytes), a.end ? "" : " (never released)");
    const std::string category = fmt::format("allocations on device {}", a.device);
    const json args = {{"bytes", a.bytes}, {"site", a.site}};
    const std::string hex = fmt::format("0x{:x}", ++id);
    events.push_back({{"ph", "b"},
                      {"cat", category},
                      {"name", name},
                      {"id", hex},
                      {"pid", a.pid},
                      {"ts", micros(a.begin)},
                      {"args", args}});
    events.push_back({{"ph", "e"},
                      {"cat", category},
                      {"name", name},
                      {"id", hex},
                      {"pid", a.pid},
                      {"ts", micros(a.end.value_or(process_end[a.pid]))}});
  }
  json other = {{"tool", "cuaudit " + report.tool_version}};
  if (report.allocation_spans_left_out) {
    other["allocations_left_out"] = fmt::format("{} allocation(s) after the first {} are not drawn",
                                                report.allocation_spans_left_out, report.allocation_spans.size());
  }
  const json doc = {{"traceEvents", events}, {"displayTimeUnit", "ms"}, {"otherData", other}};
  return doc.dump(-1, ' ', false, json::error_handler_t::replace) + "\n";
}

}  // namespace cuaudit::report
