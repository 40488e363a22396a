#include "export_collectors.h"

#include "profile_sites.h"

namespace cuaudit {

ExportCollectors::ExportCollectors(const ProcessTrace& trace, StackResolver& stacks, const ExportRequests& requests,
                                   report::Report& report)
    : trace_(trace),
      stacks_(stacks),
      requests_(requests),
      report_(report),
      spans_(trace, stacks, requests.allocation_spans, report) {
  if (requests.memory_viz_entries && !report.memory_viz)
    memory_viz_ = std::make_unique<MemoryVizCollector>(trace, stacks, requests.memory_viz_entries);
}

void ExportCollectors::add_to(ObserverList& observers) {
  if (requests_.allocation_spans) observers.add(&spans_);
  if (memory_viz_) observers.add(memory_viz_.get());
}

void ExportCollectors::finish(const ReplayResult& result, const SiteHistory& history,
                              const TimelineObserver& timeline) {
  if (requests_.allocation_spans) spans_.finish(result.leaks);
  if (requests_.profile_sites) add_profile_sites(trace_, history, timeline, stacks_, report_);
  if (memory_viz_ && !report_.memory_viz) report_.memory_viz = memory_viz_->finish();
}

}  // namespace cuaudit
