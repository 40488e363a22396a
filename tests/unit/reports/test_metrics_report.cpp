// The report as Prometheus metrics: names, labels, escaping, both exposition formats, and one
// series per label set whatever the report holds.
#include <doctest/doctest.h>

#include <string>

#include "metrics_report.h"

using namespace cuaudit::report;

namespace {

bool has(const std::string& text, const std::string& line) { return text.find(line + "\n") != std::string::npos; }

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

Report service_report() {
  Report r;
  Process p;
  p.pid = 42;
  p.command = {"./service", "--port", "8080 \"x\""};
  p.allocations = 1000;
  p.releases = 900;
  r.processes.push_back(p);
  TimelineSample s;
  s.pid = 42, s.device = 0, s.used = 3000, s.free = 7000, s.families = {{"device", 2048}, {"managed", 512}};
  r.timeline.samples.push_back(s);
  s.used = 4000, s.free = 6000;  // the later sample is the one that counts
  r.timeline.samples.push_back(s);
  SiteSeries series;
  series.pid = 42, series.device = 0, series.t = {1, 2};
  SeriesSite a;
  a.api = "cudaMalloc", a.site = "serve service.cu:41", a.bytes = {100, 300}, a.count = 3;
  SeriesSite b = a;  // another stack through the same line: the same series
  b.bytes = {10, 20};
  series.sites = {a, b};
  series.other = {5, 7};
  series.other_count = 2;
  r.timeline.site_series.push_back(series);
  PoolSeries pool;
  pool.pid = 42, pool.pool = "request arena", pool.t = {1};
  pool.reserved = {64}, pool.used = {32}, pool.free = {32}, pool.largest_free = {1}, pool.holes = {32};
  r.timeline.pool_series.push_back(pool);
  PoolSeries heap = pool;  // a pool that tells no largest block: no fragmentation figures
  heap.pool = "device heap of device 0", heap.fragmentation_measured = false;
  r.timeline.pool_series.push_back(heap);
  Finding growth;
  growth.kind = FindingKind::Growth, growth.api = "cudaMalloc", growth.pid = 42;
  growth.growth = GrowthStats{7200, 0, 60, 0, 120};
  growth.stack.push_back(Frame{0, "serve", "", "/src/service.cu", 41, "service", 0});
  r.findings.push_back(growth);
  Finding suppressed = growth;
  suppressed.kind = FindingKind::Leak, suppressed.suppressed = true;
  r.findings.push_back(suppressed);
  return r;
}

}  // namespace

TEST_CASE("a service's report as metrics: process, devices, sites, pools, growth, findings") {
  const std::string text = render_metrics(service_report(), MetricsFormat::Prometheus);
  CHECK(has(text, R"(cuaudit_process_info{pid="42",command="./service --port 8080 \"x\""} 1)"));
  CHECK(has(text, "# TYPE cuaudit_allocations_total counter"));
  CHECK(has(text, R"(cuaudit_allocations_total{pid="42"} 1000)"));
  CHECK(has(text, R"(cuaudit_releases_total{pid="42"} 900)"));
  CHECK(has(text, R"(cuaudit_device_used_bytes{pid="42",device="0"} 4000)"));
  CHECK(has(text, R"(cuaudit_device_free_bytes{pid="42",device="0"} 6000)"));
  CHECK(has(text, R"(cuaudit_live_bytes{pid="42",device="0",memory="managed"} 512)"));
  CHECK(has(text, R"(cuaudit_site_live_bytes{pid="42",device="0",site="serve service.cu:41",api="cudaMalloc"} 320)"));
  CHECK(
      has(text, R"(cuaudit_site_live_allocations{pid="42",device="0",site="serve service.cu:41",api="cudaMalloc"} 6)"));
  CHECK(has(text, R"(cuaudit_site_live_allocations{pid="42",device="0",site="other",api=""} 2)"));
  CHECK(has(text, R"(cuaudit_site_live_bytes{pid="42",device="0",site="other",api=""} 7)"));
  CHECK(has(text, R"(cuaudit_pool_largest_free_block_bytes{pid="42",pool="request arena"} 1)"));
  CHECK(has(text, R"(cuaudit_pool_fragmentation_ratio{pid="42",pool="request arena"} 0.96875)"));
  CHECK(count(text, "device heap of device 0") == 3);  // reserved, used, free: no largest block, no ratio
  // The growth series names its site as the live one does.
  CHECK(has(text, R"(cuaudit_site_growth_bytes_per_second{pid="42",site="serve service.cu:41",api="cudaMalloc"} 2)"));
  // Named by the tool as its live series is (an allocator's rule here), the two series match.
  Report named = service_report();
  named.findings[0].growth->site = "request arena";
  CHECK(has(render_metrics(named, MetricsFormat::Prometheus),
            R"(cuaudit_site_growth_bytes_per_second{pid="42",site="request arena",api="cudaMalloc"} 2)"));
  CHECK(has(text, R"(cuaudit_findings{kind="growth"} 1)"));
  CHECK(has(text, R"(cuaudit_findings{kind="leak"} 0)"));  // suppressed: not counted
  CHECK(text.find("# EOF") == std::string::npos);
}

TEST_CASE("OpenMetrics names a counter's family without _total and ends with # EOF") {
  const std::string text = render_metrics(service_report(), MetricsFormat::OpenMetrics);
  CHECK(has(text, "# TYPE cuaudit_allocations counter"));
  CHECK(has(text, R"(cuaudit_allocations_total{pid="42"} 1000)"));
  CHECK(text.size() >= 6);
  CHECK(text.substr(text.size() - 6) == "# EOF\n");
  CHECK(std::string(metrics_content_type(MetricsFormat::OpenMetrics)).find("application/openmetrics-text") == 0);
  CHECK(std::string(metrics_content_type(MetricsFormat::Prometheus)).find("version=0.0.4") != std::string::npos);
}

TEST_CASE("label values from the target are escaped and made valid UTF-8") {
  Report r;
  Process p;
  p.pid = 1;
  p.command = {"a\\b", "new\nline", "bad\xff"};
  r.processes.push_back(p);
  const std::string text = render_metrics(r, MetricsFormat::Prometheus);
  CHECK(has(text, "cuaudit_process_info{pid=\"1\",command=\"a\\\\b new\\nline bad\xef\xbf\xbd\"} 1"));
}

TEST_CASE("an empty report still declares every family, so dashboards find them before the first refresh") {
  const std::string text = render_metrics(Report{}, MetricsFormat::Prometheus);
  for (const char* family : {"cuaudit_process_info", "cuaudit_site_live_bytes", "cuaudit_pool_fragmentation_ratio",
                             "cuaudit_device_used_bytes", "cuaudit_findings"})
    CHECK(text.find(std::string("# TYPE ") + family) != std::string::npos);
  CHECK(has(text, R"(cuaudit_findings{kind="leak"} 0)"));
}
