// --metrics and --metrics-file: the report as Prometheus metrics (docs/LONG_RUNNING.md, "Metrics"),
// a gauge or counter per fact a service's on-call engineer graphs and alerts on: live bytes by
// allocation site (the biggest sites and one "other" series, so the series stay few), by device
// and kind of memory; allocations and releases; each pool's reserved, used and largest free block
// and its fragmentation; the devices' used and free memory; growing sites' rates; findings by kind;
// the program as an info metric. Names and labels follow Prometheus' conventions (base units,
// `_bytes`, `_total`).
#pragma once

#include <string>

#include "report_model.h"

namespace cuaudit::report {

enum class MetricsFormat {
  Prometheus,   // the text format 0.0.4 (node_exporter's textfile collector, any scraper)
  OpenMetrics,  // OpenMetrics 1.0 text: counters typed without `_total`, ended by "# EOF"
};

// The Content-Type a scrape's answer in `format` carries.
const char* metrics_content_type(MetricsFormat format);

std::string render_metrics(const Report& report, MetricsFormat format);

}  // namespace cuaudit::report
