#include "live_metrics.h"

#include <iostream>

#include "metrics_report.h"
#include "safe_file.h"

namespace cuaudit {

LiveMetrics::LiveMetrics(const std::string& address, std::string file, std::string run_dir, AnalysisOptions analysis)
    : file_(std::move(file)), run_dir_(std::move(run_dir)), analysis_(std::move(analysis)) {
  analysis_.snapshot = true;
  if (!address.empty()) server_ = std::make_unique<MetricsServer>(parse_listen_address(address));
  publish(report::Report{});  // the families, empty, until the first refresh
}

void LiveMetrics::refresh() {
  report::Report r;
  try {
    r = analyze_run_dir(run_dir_, analysis_);
  } catch (const NotARunDirectory&) {
    return;  // nothing recorded yet (a Python program still importing): the families stay empty
  } catch (const std::exception& e) {
    std::cerr << "cuaudit: warning: the metrics were not refreshed: " << e.what() << '\n';
    return;
  }
  publish(r);
}

void LiveMetrics::publish(const report::Report& report) {
  std::string prometheus = report::render_metrics(report, report::MetricsFormat::Prometheus);
  if (!file_.empty()) {
    std::string error;
    // By rename: the textfile collector never reads a half-written file.
    if (!replace_file(file_, prometheus, error)) std::cerr << "cuaudit: warning: " << error << '\n';
  }
  if (server_)
    server_->publish(std::move(prometheus), report::render_metrics(report, report::MetricsFormat::OpenMetrics));
}

}  // namespace cuaudit
