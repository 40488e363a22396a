// The outputs asked for beyond the report's own, gathered from the one replay of each process:
// --perfetto's allocation spans, --pprof's sites and --memory-viz's snapshot. Each costs nothing
// unless asked for.
#pragma once

#include <memory>

#include "allocation_spans.h"
#include "memory_viz.h"
#include "replay.h"
#include "report_model.h"
#include "site_history.h"
#include "stack_resolver.h"
#include "timeline.h"

namespace cuaudit {

struct ExportRequests {
  size_t allocation_spans = 0;    // --perfetto: keep up to this many allocations' lives (0: none)
  bool profile_sites = false;     // --pprof
  size_t memory_viz_entries = 0;  // --memory-viz: trace entries kept (0: no snapshot)
};

class ExportCollectors {
 public:
  ExportCollectors(const ProcessTrace& trace, StackResolver& stacks, const ExportRequests& requests,
                   report::Report& report);
  // The observers the replay must feed.
  void add_to(ObserverList& observers);
  // After the replay: what each adds to the report.
  void finish(const ReplayResult& result, const SiteHistory& history, const TimelineObserver& timeline);

 private:
  const ProcessTrace& trace_;
  StackResolver& stacks_;
  ExportRequests requests_;
  report::Report& report_;
  SpanCollector spans_;
  std::unique_ptr<MemoryVizCollector> memory_viz_;  // the report's first process with device memory
};

}  // namespace cuaudit
