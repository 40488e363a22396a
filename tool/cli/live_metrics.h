// --metrics and --metrics-file while the program runs (docs/LONG_RUNNING.md, "Metrics"): every
// --metrics-interval the run so far is analysed as `cuaudit snapshot` does, rendered as Prometheus
// metrics and handed to the HTTP server and the file; after the program's end, once more from the
// final report, so the last scrape and the file say how it ended.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "analysis.h"
#include "metrics_server.h"
#include "report_model.h"

namespace cuaudit {

class LiveMetrics {
 public:
  // Starts the server at once (before the program), so a bad address fails before an hour's run;
  // throws std::invalid_argument or std::runtime_error saying why.
  LiveMetrics(const std::string& address, std::string file, std::string run_dir, AnalysisOptions analysis);
  void refresh();                              // from the run directory as it is now
  void publish(const report::Report& report);  // from a report already made (the final one)
  const MetricsServer* server() const { return server_.get(); }

 private:
  std::unique_ptr<MetricsServer> server_;
  std::string file_, run_dir_;
  AnalysisOptions analysis_;
};

}  // namespace cuaudit
