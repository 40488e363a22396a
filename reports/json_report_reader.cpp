#include "json_report.h"

#include <fmt/format.h>

#include "json_reading.h"

// The reader half of json_report.h: report_from_json, field by field, with the path of a field
// whose type is wrong in every error.
namespace cuaudit::report {
namespace {

using namespace json_reading;

std::vector<RelatedStack> related_from(const json& j, const std::string& where) {
  std::vector<RelatedStack> out;
  const json& related = get_array(j, "related", where);
  for (size_t i = 0; i < related.size(); ++i) {
    const std::string at = fmt::format("{}.related[{}]", where, i);
    RelatedStack r;
    const auto role = related_role_from_key(get_text(related[i], "role", at));
    if (!role) bad(at + ".role", "unknown role");
    r.role = *role;
    r.api = get_text(related[i], "api", at);
    r.title = get_text(related[i], "title", at);
    r.stack = stack_from(related[i], "stack", at);
    r.omitted_frames =
        get_optional_number<uint64_t>(related[i], "omitted_frames", at).value_or(0);  // older reports: none
    out.push_back(std::move(r));
  }
  return out;
}

Finding finding_from(const json& j, const std::string& where) {
  Finding f;
  const std::string kind = get_text(j, "kind", where);
  const auto known = finding_kind_from_key(kind);
  if (!known) bad(where + ".kind", fmt::format("unknown finding kind '{}'", kind));
  f.kind = *known;
  const auto severity = severity_from_name(get_text(j, "severity", where));
  if (!severity) bad(where + ".severity", "expected error, warning or info");
  f.severity = *severity;
  f.api = get_text(j, "api", where);
  f.bytes = get_number<uint64_t>(j, "bytes", where);
  f.count = get_number<uint64_t>(j, "count", where);
  f.pid = get_number<uint64_t>(j, "pid", where);
  f.device = get_optional_number<int>(j, "device", where);
  f.headline = get_text(j, "headline", where);
  f.message = get_text(j, "message", where);
  f.notes = get_texts(j, "notes", where);
  f.address = get_hex(j, "address", where);
  f.result = get_text(j, "result", where);
  f.suppressed = get_bool(j, "suppressed", where, false);
  const std::string baseline = get_text(j, "baseline", where);
  f.baseline = baseline == "new"             ? BaselineStatus::New
               : baseline == "still_present" ? BaselineStatus::StillPresent
                                             : BaselineStatus::None;
  f.stack = stack_from(j, "stack", where);
  f.omitted_frames = get_number<uint64_t>(j, "omitted_frames", where);
  f.related = related_from(j, where);
  f.parameter = parameter_from(member(j, "parameter", where), where + ".parameter");
  f.at = get_optional_number<double>(j, "at", where);
  f.out_of_memory = out_of_memory_from(member(j, "out_of_memory", where), where + ".out_of_memory");
  f.churn = churn_from(member(j, "churn", where), where + ".churn");
  // Reports written before growth rates were recorded have no "growth".
  if (const auto it = j.find("growth"); it != j.end()) f.growth = growth_from(*it, where + ".growth");
  // Reports written before the fragmentation check have no "fragmentation".
  if (const auto it = j.find("fragmentation"); it != j.end())
    f.fragmentation = fragmentation_from(*it, where + ".fragmentation");
  f.ranks = get_numbers<int>(j, "ranks", where);
  for (int rank : f.ranks) {
    if (rank < 0) bad(where + ".ranks", "expected rank numbers");
  }
  f.pids = get_numbers<uint64_t>(j, "pids", where);
  return f;
}

Process process_from(const json& j, const std::string& where) {
  Process p;
  p.pid = get_number<uint64_t>(j, "pid", where);
  p.parent_pid = get_number<uint64_t>(j, "parent_pid", where);
  p.command = get_texts(j, "command", where);
  p.exit_code = get_optional_number<int>(j, "exit_code", where);
  const std::string signal = get_text(j, "signal", where);
  if (!signal.empty()) p.signal = signal;
  p.tracked = get_bool(j, "tracked", where, true);
  p.notes = get_texts(j, "notes", where);
  p.allocations = get_number<uint64_t>(j, "allocations", where);
  p.releases = get_number<uint64_t>(j, "releases", where);
  p.rank = get_optional_number<int>(j, "rank", where);
  p.seconds = get_optional_number<double>(j, "seconds", where);  // older reports: none
  const json& devices = get_array(j, "devices", where);
  for (size_t i = 0; i < devices.size(); ++i) {
    const std::string at = fmt::format("{}.devices[{}]", where, i);
    p.devices.push_back({get_number<int>(devices[i], "ordinal", at), get_text(devices[i], "name", at),
                         get_number<uint64_t>(devices[i], "total", at)});
  }
  return p;
}

std::vector<TimelineSample> samples_from(const json& timeline) {
  std::vector<TimelineSample> out;
  const json& samples = get_array(timeline, "samples", "timeline");
  for (size_t i = 0; i < samples.size(); ++i) {
    const std::string at = fmt::format("timeline.samples[{}]", i);
    TimelineSample s;
    s.t = get_number<double>(samples[i], "t", at);
    s.pid = get_number<uint64_t>(samples[i], "pid", at);
    s.device = get_number<int>(samples[i], "device", at);
    s.used = get_number<uint64_t>(samples[i], "used", at);
    s.free = get_number<uint64_t>(samples[i], "free", at);
    s.tracked = get_number<uint64_t>(samples[i], "tracked", at);
    s.families = families_from(samples[i], at);
    s.pool_reserved = get_optional_number<uint64_t>(samples[i], "pool_reserved", at);
    s.pool_used = get_optional_number<uint64_t>(samples[i], "pool_used", at);
    s.pool_reserved_high = get_optional_number<uint64_t>(samples[i], "pool_reserved_high", at);
    s.pool_used_high = get_optional_number<uint64_t>(samples[i], "pool_used_high", at);
    s.blocks = get_optional_number<uint64_t>(samples[i], "blocks", at);
    out.push_back(std::move(s));
  }
  return out;
}

std::vector<DevicePeak> peaks_from(const json& timeline) {
  std::vector<DevicePeak> out;
  const json& peaks = get_array(timeline, "peaks", "timeline");
  for (size_t i = 0; i < peaks.size(); ++i) {
    const std::string at = fmt::format("timeline.peaks[{}]", i);
    DevicePeak p;
    p.pid = get_number<uint64_t>(peaks[i], "pid", at);
    p.device = get_number<int>(peaks[i], "device", at);
    p.t = get_number<double>(peaks[i], "t", at);
    p.used = get_number<uint64_t>(peaks[i], "used", at);
    p.tracked = get_number<uint64_t>(peaks[i], "tracked", at);
    p.families = families_from(peaks[i], at);
    const json& sites = get_array(peaks[i], "sites", at);
    for (size_t k = 0; k < sites.size(); ++k) {
      const std::string site_at = fmt::format("{}.sites[{}]", at, k);
      PeakSite site;
      site.api = get_text(sites[k], "api", site_at);
      site.bytes = get_number<uint64_t>(sites[k], "bytes", site_at);
      site.count = get_number<uint64_t>(sites[k], "count", site_at);
      site.stack = stack_from(sites[k], "stack", site_at);
      site.site = get_text(sites[k], "site", site_at);  // "" in older reports
      p.sites.push_back(std::move(site));
    }
    out.push_back(std::move(p));
  }
  return out;
}

// Reports written before the stacked chart have no "site_series".
std::vector<SiteSeries> site_series_from(const json& timeline) {
  std::vector<SiteSeries> out;
  const json& series = get_array(timeline, "site_series", "timeline");
  for (size_t i = 0; i < series.size(); ++i) {
    const json& x = series[i];
    const std::string at = fmt::format("timeline.site_series[{}]", i);
    SiteSeries s;
    s.pid = get_number<uint64_t>(x, "pid", at);
    s.device = get_number<int>(x, "device", at);
    s.t = get_numbers<double>(x, "t", at);
    s.other = get_numbers<uint64_t>(x, "other", at);
    const json& sites = get_array(x, "sites", at);
    for (size_t k = 0; k < sites.size(); ++k) {
      const std::string site_at = fmt::format("{}.sites[{}]", at, k);
      SeriesSite site;
      site.api = get_text(sites[k], "api", site_at);
      site.bytes = get_numbers<uint64_t>(sites[k], "bytes", site_at);
      site.stack = stack_from(sites[k], "stack", site_at);
      site.site = get_text(sites[k], "site", site_at);  // "" in older reports
      s.sites.push_back(std::move(site));
    }
    out.push_back(std::move(s));
  }
  return out;
}

// A series' column `name`: one value per time, as `times` says there are.
std::vector<uint64_t> column_of(const json& x, const char* name, const std::string& at, size_t times) {
  std::vector<uint64_t> column = get_numbers<uint64_t>(x, name, at);
  if (column.size() != times) bad(at + "." + name, "expected as many values as times");
  return column;
}

// Reports written before the pools' series have no "pool_series".
std::vector<PoolSeries> pool_series_from(const json& timeline) {
  std::vector<PoolSeries> out;
  const json& series = get_array(timeline, "pool_series", "timeline");
  for (size_t i = 0; i < series.size(); ++i) {
    const json& x = series[i];
    const std::string at = fmt::format("timeline.pool_series[{}]", i);
    PoolSeries p;
    p.pid = get_number<uint64_t>(x, "pid", at);
    p.pool = get_text(x, "pool", at);
    p.t = get_numbers<double>(x, "t", at);
    p.reserved = column_of(x, "reserved", at, p.t.size());
    p.used = column_of(x, "used", at, p.t.size());
    p.free = column_of(x, "free", at, p.t.size());
    p.largest_free = column_of(x, "largest_free", at, p.t.size());
    // Reports written before the holes column count every free byte as a hole.
    p.holes = x.contains("holes") ? column_of(x, "holes", at, p.t.size()) : p.free;
    p.fragmentation_measured = get_bool(x, "fragmentation_measured", at, true);  // absent before the device heap's
    out.push_back(std::move(p));
  }
  return out;
}

// Reports written before the migration chart have no "migration_series".
std::vector<MigrationSeries> migration_series_from(const json& timeline) {
  std::vector<MigrationSeries> out;
  const json& series = get_array(timeline, "migration_series", "timeline");
  for (size_t i = 0; i < series.size(); ++i) {
    const json& x = series[i];
    const std::string at = fmt::format("timeline.migration_series[{}]", i);
    MigrationSeries m;
    m.pid = get_number<uint64_t>(x, "pid", at);
    m.device = get_number<int>(x, "device", at);
    m.t = get_numbers<double>(x, "t", at);
    m.to_device = column_of(x, "to_device", at, m.t.size());
    m.to_host = column_of(x, "to_host", at, m.t.size());
    out.push_back(std::move(m));
  }
  return out;
}

Timeline timeline_from(const json& doc) {
  Timeline out;
  const json& timeline = member(doc, "timeline", "report");
  if (timeline.is_null()) return out;
  out.samples = samples_from(timeline);
  out.peaks = peaks_from(timeline);
  out.site_series = site_series_from(timeline);
  out.pool_series = pool_series_from(timeline);
  out.migration_series = migration_series_from(timeline);
  return out;
}

Report report_from_checked_json(const json& doc) {
  if (!doc.is_object() || !doc.contains("schema") || doc["schema"] != kSchema) {
    throw ReportFormatError(fmt::format("not a cuaudit report (schema {})", kSchema));
  }
  Report r;
  r.tool_version = get_text(member(doc, "tool", "report"), "version", "tool");
  const json& processes = get_array(doc, "processes", "report");
  for (size_t i = 0; i < processes.size(); ++i)
    r.processes.push_back(process_from(processes[i], fmt::format("processes[{}]", i)));
  const json& findings = get_array(doc, "findings", "report");
  for (size_t i = 0; i < findings.size(); ++i)
    r.findings.push_back(finding_from(findings[i], fmt::format("findings[{}]", i)));
  const json& summary = member(doc, "summary", "report");
  if (!summary.is_null()) {
    r.summary.leaked_bytes = get_number<uint64_t>(summary, "leaked_bytes", "summary");
    r.summary.leaked_allocations = get_number<uint64_t>(summary, "leaked_allocations", "summary");
    r.summary.findings = get_number<uint64_t>(summary, "findings", "summary");
    r.summary.error_findings = get_number<uint64_t>(summary, "errors", "summary");
  } else {
    r.summary = summarize(r.findings);
  }
  r.notes = get_texts(doc, "notes", "report");
  const json& suppressions = get_array(doc, "suppressions", "report");
  for (size_t i = 0; i < suppressions.size(); ++i) {
    const std::string at = fmt::format("suppressions[{}]", i);
    r.suppressions.push_back({get_text(suppressions[i], "rule", at), get_text(suppressions[i], "file", at),
                              get_number<int>(suppressions[i], "line", at),
                              get_number<uint64_t>(suppressions[i], "hits", at),
                              get_number<uint64_t>(suppressions[i], "bytes", at)});
  }
  const json& unchecked = get_array(doc, "unchecked", "report");  // older reports: none
  for (size_t i = 0; i < unchecked.size(); ++i) {
    const std::string at = fmt::format("unchecked[{}]", i);
    const std::string key = get_text(unchecked[i], "kind", at);
    const auto kind = finding_kind_from_key(key);
    if (!kind) bad(at + ".kind", fmt::format("unknown finding kind '{}'", key));
    r.unchecked.push_back({*kind, get_text(unchecked[i], "reason", at)});
  }
  const json& baseline = member(doc, "baseline", "report");
  if (!baseline.is_null()) {
    BaselineResult b;
    b.file = get_text(baseline, "file", "baseline");
    b.new_findings = get_number<uint64_t>(baseline, "new", "baseline");
    b.still_present = get_number<uint64_t>(baseline, "still_present", "baseline");
    b.fixed = get_texts(baseline, "fixed", "baseline");
    r.baseline = std::move(b);
  }
  r.nothing_tracked = get_bool(doc, "nothing_tracked", "report", false);
  r.incomplete = get_bool(doc, "incomplete", "report", false);
  r.timeline = timeline_from(doc);
  r.merged_from = get_texts(doc, "merged_from", "report");
  if (const json& options = member(doc, "options", "report"); !options.is_null()) {  // older reports lack it
    r.options_from_environment = get_texts(options, "environment", "options");
    r.options_from_command_line = get_texts(options, "command_line", "options");
    if (const json& file = member(options, "file", "options"); !file.is_null()) {
      r.options_file = get_text(file, "path", "options file");
      r.options_from_file = get_texts(file, "options", "options file");
    }
  }
  return r;
}

}  // namespace

Report report_from_json(const json& doc) {
  // Every field is read through json_reading.h, which says where a report is wrong; a JSON library
  // exception that a field's reading did not foresee still becomes that error, never an abort.
  try {
    return report_from_checked_json(doc);
  } catch (const json::exception& e) {
    throw ReportFormatError(fmt::format("unexpected JSON: {}", e.what()));
  }
}

}  // namespace cuaudit::report
