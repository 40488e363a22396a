#include "json_report.h"

#include <limits>
#include <type_traits>

#include <fmt/format.h>

namespace cuaudit::report {
namespace {

using nlohmann::json;

json optional_int(const std::optional<int>& v) { return v ? json(*v) : json(nullptr); }
json text_or_null(const std::string& s) { return s.empty() ? json(nullptr) : json(s); }
json hex_or_null(const std::optional<uint64_t>& v) { return v ? json(fmt::format("0x{:x}", *v)) : json(nullptr); }

json frame_json(const Frame& f) {
  json out = {{"function", text_or_null(f.function)},
              {"file", text_or_null(f.file)},
              {"line", f.line > 0 ? json(f.line) : json(nullptr)},
              {"module", text_or_null(f.module)},
              {"pc", fmt::format("0x{:x}", f.pc)}};
  if (!f.mangled.empty()) out["mangled"] = f.mangled;
  if (f.module_offset) out["module_offset"] = fmt::format("0x{:x}", f.module_offset);
  return out;
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

json optional_bytes(const std::optional<uint64_t>& v) { return v ? json(*v) : json(nullptr); }

json out_of_memory_json(const Boxed<OutOfMemoryState>& o) {
  if (!o) return nullptr;
  return {{"requested", o->requested},
          {"device_total", optional_bytes(o->device_total)},
          {"device_free", optional_bytes(o->device_free)},
          {"program_held", o->program_held},
          {"families", families_json(o->families)},
          {"pool_reserved", optional_bytes(o->pool_reserved)},
          {"pool_used", optional_bytes(o->pool_used)},
          {"other_processes", optional_bytes(o->other_processes)},
          {"allocator_limit", optional_bytes(o->allocator_limit)},
          {"allocator_in_use", optional_bytes(o->allocator_in_use)},
          {"allocator_largest_free", optional_bytes(o->allocator_largest_free)},
          {"verdict", o->verdict}};
}

json churn_json(const std::optional<ChurnStats>& c) {
  if (!c) return nullptr;
  return {{"pairs", c->pairs},
          {"median_lifetime_ns", c->median_lifetime_ns},
          {"call_ns", c->call_ns},
          {"run_share", c->run_share}};
}

json picture_json(const PoolPicture& p) {
  json sites = json::array();
  for (const PictureSite& site : p.sites) {
    sites.push_back({{"api", site.api},
                     {"bytes", site.bytes},
                     {"count", site.count},
                     {"at", site.at ? frame_json(*site.at) : json(nullptr)}});
  }
  json segments = json::array();
  for (const SegmentPicture& segment : p.segments) {
    json blocks = json::array();  // [offset, bytes, site]: thousands of them, kept short
    for (const BlockSpan& b : segment.blocks) blocks.push_back(json::array({b.offset, b.bytes, b.site}));
    segments.push_back({{"bytes", segment.bytes}, {"blocks", blocks}});
  }
  return {{"sites", sites}, {"segments", segments}, {"truncated", p.truncated}};
}

json fragmentation_json(const Boxed<FragmentationStats>& g) {
  if (!g) return nullptr;
  return {{"pool", g->pool},
          {"trigger", g->trigger},
          {"at", g->at},
          {"requested", g->requested},
          {"reserved", g->reserved},
          {"used", g->used},
          {"free", g->free},
          {"largest_free", g->largest_free},
          {"ratio", g->ratio},
          {"grew_by", g->grew_by},
          {"misses", g->misses},
          {"request_sizes", g->request_sizes},
          {"stretch_from", g->stretch_from},
          {"stretch_seconds", g->stretch_seconds},
          {"picture", picture_json(g->picture)}};
}

json growth_json(const Boxed<GrowthStats>& g) {
  if (!g) return nullptr;
  return {{"bytes_per_hour", g->bytes_per_hour}, {"start", g->start},         {"end", g->end},
          {"start_bytes", g->start_bytes},       {"end_bytes", g->end_bytes}, {"site", g->site}};
}

json finding_json(const Finding& f) {
  json related = json::array();
  for (const RelatedStack& r : f.related) {
    related.push_back({{"role", related_role_key(r.role)},
                       {"api", r.api},
                       {"title", r.title},
                       {"stack", stack_json(r.stack)},
                       {"omitted_frames", r.omitted_frames}});
  }
  json parameter = nullptr;
  if (f.parameter) {
    const KernelParameter& p = *f.parameter;
    parameter = {{"kernel", p.kernel},
                 {"index", p.index},
                 {"type", text_or_null(p.type)},
                 {"alignment", p.alignment ? json(p.alignment) : json(nullptr)},
                 {"offset", p.offset ? json(*p.offset) : json(nullptr)},
                 {"member_offset", p.member_offset},
                 {"alignment_from", text_or_null(p.alignment_from)}};
  }
  const char* baseline = baseline_status_key(f.baseline);
  json out = {{"kind", finding_kind_key(f.kind)},
              {"severity", severity_name(f.severity)},
              {"api", f.api},
              {"bytes", f.bytes},
              {"count", f.count},
              {"pid", f.pid},
              {"device", optional_int(f.device)},
              {"headline", f.headline},
              {"message", f.message},
              {"notes", f.notes},
              {"address", hex_or_null(f.address)},
              {"result", text_or_null(f.result)},
              {"suppressed", f.suppressed},
              {"baseline", baseline ? json(baseline) : json(nullptr)},
              {"stack", stack_json(f.stack)},
              {"omitted_frames", f.omitted_frames},
              {"related", related},
              {"parameter", parameter},
              {"at", f.at ? json(*f.at) : json(nullptr)},
              {"out_of_memory", out_of_memory_json(f.out_of_memory)},
              {"churn", churn_json(f.churn)},
              {"growth", growth_json(f.growth)},
              {"fragmentation", fragmentation_json(f.fragmentation)}};
  if (!f.ranks.empty()) out["ranks"] = f.ranks;  // merged reports only
  if (!f.pids.empty()) out["pids"] = f.pids;
  return out;
}

json process_json(const Process& p) {
  json out = {{"pid", p.pid},
              {"parent_pid", p.parent_pid},
              {"command", p.command},
              {"exit_code", optional_int(p.exit_code)},
              {"signal", p.signal ? json(*p.signal) : json(nullptr)},
              {"tracked", p.tracked},
              {"allocations", p.allocations},
              {"releases", p.releases},
              {"seconds", p.seconds ? json(*p.seconds) : json(nullptr)},
              {"notes", p.notes}};
  if (p.rank) out["rank"] = *p.rank;
  json devices = json::array();
  for (const DeviceDescription& d : p.devices)
    devices.push_back({{"ordinal", d.ordinal}, {"name", d.name}, {"total", d.total}});
  out["devices"] = devices;
  return out;
}

json timeline_json(const Timeline& timeline) {
  json samples = json::array();
  for (const TimelineSample& t : timeline.samples) {
    json sample = {{"t", t.t},
                   {"pid", t.pid},
                   {"device", t.device},
                   {"used", t.used},
                   {"free", t.free},
                   {"tracked", t.tracked},
                   {"families", families_json(t.families)}};
    if (t.pool_reserved) {
      sample["pool_reserved"] = *t.pool_reserved;
      sample["pool_used"] = t.pool_used.value_or(0);
      sample["pool_reserved_high"] = t.pool_reserved_high.value_or(0);
      sample["pool_used_high"] = t.pool_used_high.value_or(0);
    }
    if (t.blocks) sample["blocks"] = *t.blocks;
    samples.push_back(std::move(sample));
  }
  json peaks = json::array();
  for (const DevicePeak& p : timeline.peaks) {
    json sites = json::array();
    for (const PeakSite& site : p.sites) {
      sites.push_back({{"api", site.api},
                       {"site", site.site},
                       {"bytes", site.bytes},
                       {"count", site.count},
                       {"stack", stack_json(site.stack)}});
    }
    peaks.push_back({{"pid", p.pid},
                     {"device", p.device},
                     {"t", p.t},
                     {"used", p.used},
                     {"tracked", p.tracked},
                     {"families", families_json(p.families)},
                     {"sites", sites}});
  }
  json series = json::array();
  for (const SiteSeries& s : timeline.site_series) {
    json sites = json::array();
    for (const SeriesSite& site : s.sites) {
      sites.push_back(
          {{"api", site.api}, {"site", site.site}, {"bytes", site.bytes}, {"stack", stack_json(site.stack)}});
    }
    series.push_back({{"pid", s.pid}, {"device", s.device}, {"t", s.t}, {"sites", sites}, {"other", s.other}});
  }
  json pools = json::array();
  for (const PoolSeries& p : timeline.pool_series) {
    pools.push_back({{"pid", p.pid},
                     {"pool", p.pool},
                     {"t", p.t},
                     {"reserved", p.reserved},
                     {"used", p.used},
                     {"free", p.free},
                     {"largest_free", p.largest_free},
                     {"holes", p.holes},
                     {"fragmentation_measured", p.fragmentation_measured}});
  }
  json migrations = json::array();
  for (const MigrationSeries& m : timeline.migration_series) {
    migrations.push_back(
        {{"pid", m.pid}, {"device", m.device}, {"t", m.t}, {"to_device", m.to_device}, {"to_host", m.to_host}});
  }
  return {{"samples", samples},
          {"peaks", peaks},
          {"site_series", series},
          {"pool_series", pools},
          {"migration_series", migrations}};
}

json unchecked_json(const std::vector<UncheckedKind>& unchecked) {
  json out = json::array();
  for (const UncheckedKind& u : unchecked) out.push_back({{"kind", finding_kind_key(u.kind)}, {"reason", u.reason}});
  return out;
}

// --- reading --------------------------------------------------------------------------------

}  // namespace

json finding_to_json(const Finding& f) { return finding_json(f); }

json report_to_json(const Report& report) {
  json processes = json::array();
  for (const Process& p : report.processes) processes.push_back(process_json(p));
  json findings = json::array();
  for (const Finding& f : report.findings) findings.push_back(finding_json(f));
  json suppressions = json::array();
  for (const SuppressionUse& u : report.suppressions) {
    suppressions.push_back(
        {{"rule", u.rule}, {"file", u.file}, {"line", u.line}, {"hits", u.hits}, {"bytes", u.bytes}});
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
              {"unchecked", unchecked_json(report.unchecked)},
              {"baseline", report.baseline ? json{{"file", report.baseline->file},
                                                  {"new", report.baseline->new_findings},
                                                  {"still_present", report.baseline->still_present},
                                                  {"fixed", report.baseline->fixed}}
                                           : json(nullptr)},
              {"nothing_tracked", report.nothing_tracked},
              {"incomplete", report.incomplete},
              {"timeline", timeline_json(report.timeline)}};
  if (!report.merged_from.empty()) doc["merged_from"] = report.merged_from;
  doc["options"] = {{"environment", report.options_from_environment},
                    {"command_line", report.options_from_command_line}};
  if (!report.options_file.empty())
    doc["options"]["file"] = {{"path", report.options_file}, {"options", report.options_from_file}};
  return doc;
}

std::string render_json(const Report& report) {
  // Invalid UTF-8 from the target (a path, a kernel name) is replaced rather than failing the report.
  return report_to_json(report).dump(2, ' ', false, json::error_handler_t::replace) + "\n";
}

}  // namespace cuaudit::report
