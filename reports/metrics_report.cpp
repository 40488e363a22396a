#include "metrics_report.h"

#include <cmath>
#include <map>
#include <tuple>

#include <fmt/format.h>

#include "function_names.h"
#include "text_helpers.h"

namespace cuaudit::report {
namespace {

// A label value as the exposition formats escape it: backslash, double quote and newline.
std::string label_value(const std::string& text) {
  std::string out;
  for (char c : valid_utf8(text)) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '"') {
      out += "\\\"";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

using Labels = std::vector<std::pair<std::string, std::string>>;

// One metric family: its HELP and TYPE lines once, then its samples.
class Family {
 public:
  Family(std::string& out, MetricsFormat format, const std::string& name, const char* type, const char* help)
      : out_(out), name_(name), counter_(std::string(type) == "counter") {
    // OpenMetrics names a counter's family without `_total`; the 0.0.4 format names it as its sample.
    const std::string family = counter_ && format == MetricsFormat::OpenMetrics ? name : sample_name();
    out_ += fmt::format("# HELP {} {}\n# TYPE {} {}\n", family, help, family, type);
  }
  void add(const Labels& labels, double value) {
    out_ += sample_name();
    if (!labels.empty()) {
      out_ += '{';
      for (size_t i = 0; i < labels.size(); ++i)
        out_ += fmt::format("{}{}=\"{}\"", i ? "," : "", labels[i].first, label_value(labels[i].second));
      out_ += '}';
    }
    // Integers print as integers (bytes are exact), the rest with what a double holds.
    if (std::isfinite(value) && value == std::floor(value) && std::fabs(value) < 9.0e15) {
      out_ += fmt::format(" {}\n", static_cast<int64_t>(value));
    } else {
      out_ += fmt::format(" {}\n", std::isnan(value) ? std::string("NaN") : fmt::format("{:g}", value));
    }
  }

 private:
  std::string sample_name() const { return counter_ ? name_ + "_total" : name_; }
  std::string& out_;
  std::string name_;
  bool counter_;
};

std::string pid_label(uint64_t pid) { return std::to_string(pid); }

void process_metrics(std::string& out, MetricsFormat format, const Report& r) {
  Family info(out, format, "cuaudit_process_info", "gauge", "A process cuaudit follows (1), with its command line.");
  for (const Process& p : r.processes) info.add({{"pid", pid_label(p.pid)}, {"command", join_words(p.command)}}, 1);
  Family allocations(out, format, "cuaudit_allocations", "counter", "Allocations the process made, every tracked API.");
  for (const Process& p : r.processes) allocations.add({{"pid", pid_label(p.pid)}}, static_cast<double>(p.allocations));
  Family releases(out, format, "cuaudit_releases", "counter", "Releases the process made, every tracked API.");
  for (const Process& p : r.processes) releases.add({{"pid", pid_label(p.pid)}}, static_cast<double>(p.releases));
}

// The last memory sample of each process and device: what the driver and the program said then.
void device_metrics(std::string& out, MetricsFormat format, const Report& r) {
  std::map<std::pair<uint64_t, int>, const TimelineSample*> last;
  for (const TimelineSample& s : r.timeline.samples) last[{s.pid, s.device}] = &s;
  Family used(out, format, "cuaudit_device_used_bytes", "gauge",
              "Memory in use on the device (cuMemGetInfo), every process's.");
  for (const auto& [key, s] : last)
    used.add({{"pid", pid_label(key.first)}, {"device", std::to_string(key.second)}}, static_cast<double>(s->used));
  Family free(out, format, "cuaudit_device_free_bytes", "gauge", "Memory free on the device (cuMemGetInfo).");
  for (const auto& [key, s] : last)
    free.add({{"pid", pid_label(key.first)}, {"device", std::to_string(key.second)}}, static_cast<double>(s->free));
  Family live(out, format, "cuaudit_live_bytes", "gauge",
              "Memory the program's live allocations hold, by device and kind of memory.");
  for (const auto& [key, s] : last) {
    for (const auto& [family, bytes] : s->families)
      live.add({{"pid", pid_label(key.first)}, {"device", std::to_string(key.second)}, {"memory", family}},
               static_cast<double>(bytes));
  }
}

// A site's series name: its short name where the report gave one, else its frames' (one format for
// every site label, so a growth series and a live one of the same line match).
std::string series_site(const SeriesSite& site) { return site.site.empty() ? stack_site_name(site.stack) : site.site; }

// Each device's biggest sites now (the stacked chart's last bucket) and the rest as "other". Two
// stacks of one line are one series: a scrape with two samples of one label set is refused. In
// watch mode the figures are estimates from sampled stacks (docs/LONG_RUNNING.md).
void site_metrics(std::string& out, MetricsFormat format, const Report& r) {
  struct Held {
    uint64_t bytes = 0, count = 0;
  };
  std::vector<std::pair<const SiteSeries*, std::map<std::pair<std::string, std::string>, Held>>> devices;
  for (const SiteSeries& s : r.timeline.site_series) {
    std::map<std::pair<std::string, std::string>, Held> by_site;  // (site, api) -> what it holds
    for (const SeriesSite& site : s.sites) {
      if (site.bytes.empty()) continue;
      Held& held = by_site[{series_site(site), site.api}];
      held.bytes += site.bytes.back();
      held.count += site.count;
    }
    if (!s.other.empty()) by_site[{"other", ""}] = {s.other.back(), s.other_count};
    devices.emplace_back(&s, std::move(by_site));
  }
  auto labels = [](const SiteSeries& s, const std::pair<std::string, std::string>& key) {
    return Labels{
        {"pid", pid_label(s.pid)}, {"device", std::to_string(s.device)}, {"site", key.first}, {"api", key.second}};
  };
  Family bytes(out, format, "cuaudit_site_live_bytes", "gauge",
               "Memory live allocations hold, by allocation site (the biggest sites; the rest as site=\"other\"; "
               "estimated from sampled stacks in watch mode).");
  for (const auto& [series, sites] : devices)
    for (const auto& [key, held] : sites) bytes.add(labels(*series, key), static_cast<double>(held.bytes));
  Family counts(out, format, "cuaudit_site_live_allocations", "gauge",
                "Live allocations, by allocation site (the same sites; estimated from sampled stacks in watch mode).");
  for (const auto& [series, sites] : devices)
    for (const auto& [key, held] : sites) counts.add(labels(*series, key), static_cast<double>(held.count));
}

void pool_metrics(std::string& out, MetricsFormat format, const Report& r) {
  struct Column {
    const char* name;
    const char* help;
    const std::vector<uint64_t> PoolSeries::*values;
  };
  const Column columns[] = {
      {"cuaudit_pool_reserved_bytes", "Memory the pool took from CUDA.", &PoolSeries::reserved},
      {"cuaudit_pool_used_bytes", "Memory of the pool's blocks in use.", &PoolSeries::used},
      {"cuaudit_pool_free_bytes", "Memory the pool holds and has not handed out.", &PoolSeries::free},
      {"cuaudit_pool_largest_free_block_bytes", "The largest request the pool could serve without taking more.",
       &PoolSeries::largest_free},
  };
  for (const Column& c : columns) {
    Family family(out, format, c.name, "gauge", c.help);
    for (const PoolSeries& p : r.timeline.pool_series) {
      const std::vector<uint64_t>& values = p.*c.values;
      if (values.empty()) continue;
      if (c.values == &PoolSeries::largest_free && !p.fragmentation_measured) continue;
      family.add({{"pid", pid_label(p.pid)}, {"pool", p.pool}}, static_cast<double>(values.back()));
    }
  }
  Family ratio(
      out, format, "cuaudit_pool_fragmentation_ratio", "gauge",
      "1 - largest free block / free memory in holes: 0 when the free memory is one block, near 1 when it is crumbs.");
  for (const PoolSeries& p : r.timeline.pool_series) {
    if (!p.fragmentation_measured || p.holes.empty() || p.largest_free.empty()) continue;
    const uint64_t holes = p.holes.back(), largest = std::min(p.largest_free.back(), p.holes.back());
    ratio.add({{"pid", pid_label(p.pid)}, {"pool", p.pool}},
              holes ? 1.0 - static_cast<double>(largest) / static_cast<double>(holes) : 0.0);
  }
}

void finding_metrics(std::string& out, MetricsFormat format, const Report& r) {
  Family growth(
      out, format, "cuaudit_site_growth_bytes_per_second", "gauge",
      "How fast a site that keeps growing grows (its growth finding's slope over the second half of the run).");
  std::map<std::tuple<uint64_t, std::string, std::string>, double> rates;  // (pid, site, api): one series each
  for (const Finding& f : r.findings) {
    if (!f.growth || f.suppressed) continue;
    // Named as cuaudit_site_live_bytes names the same site (an allocator a rule names, a Python line).
    const std::string site = f.growth->site.empty() ? stack_site_name(f.stack) : f.growth->site;
    rates[{f.pid, site, f.api}] += f.growth->bytes_per_hour / 3600.0;
  }
  for (const auto& [key, rate] : rates)
    growth.add({{"pid", pid_label(std::get<0>(key))}, {"site", std::get<1>(key)}, {"api", std::get<2>(key)}}, rate);
  std::map<std::string, uint64_t> counts;
  for (const Finding& f : r.findings)
    if (!f.suppressed) ++counts[finding_kind_key(f.kind)];
  Family findings(out, format, "cuaudit_findings", "gauge", "Unsuppressed findings so far, by kind.");
  for (const FindingKindInfo& k : kFindingKinds) findings.add({{"kind", k.key}}, static_cast<double>(counts[k.key]));
}

}  // namespace

const char* metrics_content_type(MetricsFormat format) {
  return format == MetricsFormat::OpenMetrics ? "application/openmetrics-text; version=1.0.0; charset=utf-8"
                                              : "text/plain; version=0.0.4; charset=utf-8";
}

std::string render_metrics(const Report& report, MetricsFormat format) {
  std::string out;
  process_metrics(out, format, report);
  device_metrics(out, format, report);
  site_metrics(out, format, report);
  pool_metrics(out, format, report);
  finding_metrics(out, format, report);
  if (format == MetricsFormat::OpenMetrics) out += "# EOF\n";
  return out;
}

}  // namespace cuaudit::report
