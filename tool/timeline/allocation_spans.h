// --perfetto's allocation tracks: the life of every allocation (allocation to release, or to the
// process's end), from one more replay of the trace, made only when asked for.
#pragma once

#include <optional>
#include <vector>

#include "replay.h"
#include "report_model.h"
#include "stack_resolver.h"
#include "trace_model.h"

namespace cuaudit {

// Collects the spans during the replay: each released allocation's as it is released, the leaked
// ones at the end.
class SpanCollector : public ReplayObserver {
 public:
  SpanCollector(const ProcessTrace& trace, StackResolver& stacks, size_t limit, report::Report& report);
  void on_released(const MemoryEvent& allocation, const MemoryEvent& release) override;
  void finish(const std::vector<LeakedAllocation>& leaks);

 private:
  void add(const MemoryEvent& a, std::optional<double> end);
  const ProcessTrace& trace_;
  StackResolver& stacks_;
  size_t limit_;
  report::Report& report_;
};

// Appends `trace`'s spans to report.allocation_spans while fewer than `limit` are there; counts the
// others in report.allocation_spans_left_out.
void collect_allocation_spans(const ProcessTrace& trace, StackResolver& stacks, size_t limit, report::Report& report);

}  // namespace cuaudit
