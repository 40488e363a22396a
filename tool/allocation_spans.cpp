#include "allocation_spans.h"

#include <algorithm>

#include "api_table.h"
#include "replay.h"

namespace cuaudit {
namespace {

class SpanCollector : public ReplayObserver {
 public:
  SpanCollector(const ProcessTrace& trace, StackResolver& stacks, size_t limit, report::Report& report)
      : trace_(trace), stacks_(stacks), limit_(limit), report_(report) {}
  void on_released(const MemoryEvent& allocation, const MemoryEvent& release) override {
    add(allocation, trace_.seconds_since_start(release.time_ns));
  }
  void add(const MemoryEvent& a, std::optional<double> end) {
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

 private:
  const ProcessTrace& trace_;
  StackResolver& stacks_;
  size_t limit_;
  report::Report& report_;
};

}  // namespace

void collect_allocation_spans(const ProcessTrace& trace, StackResolver& stacks, size_t limit, report::Report& report) {
  SpanCollector collector(trace, stacks, limit, report);
  const ReplayResult result = replay(trace, &collector);
  for (const LeakedAllocation& leak : result.leaks) collector.add(leak.allocation, std::nullopt);
}

}  // namespace cuaudit
