#include "allocation_spans.h"

#include <algorithm>

#include "api_table.h"
#include "replay.h"

namespace cuaudit {
SpanCollector::SpanCollector(const ProcessTrace& trace, StackResolver& stacks, size_t limit, report::Report& report)
    : trace_(trace), stacks_(stacks), limit_(limit), report_(report) {}

void SpanCollector::on_released(const MemoryEvent& allocation, const MemoryEvent& release) {
  add(allocation, trace_.seconds_since_start(release.time_ns));
}

void SpanCollector::finish(const std::vector<LeakedAllocation>& leaks) {
  for (const LeakedAllocation& leak : leaks) add(leak.allocation, std::nullopt);
}

void SpanCollector::add(const MemoryEvent& a, std::optional<double> end) {
  if (report_.allocation_spans.size() >= limit_) {
    ++report_.allocation_spans_left_out;
    return;
  }
  report::AllocationSpan span;
  span.pid = trace_.pid;
  span.device = a.device;
  span.api = std::string(api_info(stacks_.api_called(a.stack_id, a.api)).name);
  span.bytes = a.bytes;
  span.begin = trace_.seconds_since_start(a.time_ns);
  span.end = end;
  span.site = stacks_.call_site(a.stack_id);
  report_.allocation_spans.push_back(std::move(span));
}

void collect_allocation_spans(const ProcessTrace& trace, StackResolver& stacks, size_t limit, report::Report& report) {
  SpanCollector collector(trace, stacks, limit, report);
  collector.finish(replay(trace, &collector).leaks);
}

}  // namespace cuaudit
