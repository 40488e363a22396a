// Failing CUDA calls, judged: did the program look at the error? `unchecked_error` when it did
// not, `api_error` (info) when it did; with --check-api-results, call sites that discard a CUDA
// result even on success (warnings).
#pragma once

#include <map>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "replay.h"
#include "report_model.h"
#include "result_use.h"
#include "stack_resolver.h"
#include "trace_model.h"

namespace cuaudit {

struct ErrorCheckOptions {
  bool check_api_results = false;
};

// How a failing call was (or was not) looked at.
enum class ErrorHandling {
  CheckedAtCallSite,  // the machine code reads the result
  RetrievedLater,     // cudaGetLastError / cudaPeekAtLastError returned it before another error
  Unchecked,          // neither
  Undecided,          // the machine code could not be followed and nothing retrieved it
};

// The decision rule, on its own so that it is tested without traces: `launch` errors are only
// seen through the last-error functions; other calls by their call site first.
ErrorHandling decide_error_handling(bool launch, bool runtime_api, ResultUse call_site, bool retrieved_later);

// How failing calls were handled, judged once per trace: the error check and the out-of-memory
// check ask the same question.
class FailureJudge {
 public:
  FailureJudge(const ProcessTrace& trace, StackResolver& stacks, CallSiteJudge& judge);
  // `failure`: an Alloc, Free or FailedCall event with a failing result; `api`: the name the
  // program called it by.
  ErrorHandling handling(const Event& failure, const std::string& api);
  // Whether another runtime error replaced this one before anything retrieved it.
  bool replaced(const Event& failure) const;
  // What the program's code at a stack's call site does with the call's result.
  ResultUse result_use(uint64_t stack_id);

 private:
  StackResolver& stacks_;
  CallSiteJudge& judge_;
  std::unordered_map<uint64_t, std::pair<bool, bool>> retrieved_;  // seq -> {retrieved, replaced}
};

// A failed allocation leaves whatever was in the pointer: where the program used it next (the
// first failed copy or memset on the same thread given that value), as a note; empty when none.
std::string garbage_pointer_use(const ProcessTrace& trace, const Event& failed_allocation, StackResolver& stacks);

// `explained`: sequence numbers of failures already reported otherwise (a double free's refused
// cudaFree is that finding, not also an unchecked error).
// `failures`: the trace's judge, the one the out-of-memory check used too.
// `memory_call_sites`: stack -> API of the successful allocations and releases (for
// --check-api-results), which `trace.events` need not hold.
std::vector<report::Finding> error_findings(const ProcessTrace& trace, const std::set<uint64_t>& explained,
                                            StackResolver& stacks, FailureJudge& failures,
                                            const ErrorCheckOptions& options,
                                            const std::map<uint64_t, Api>& memory_call_sites);
// The same, over a trace with all its events in memory.
std::vector<report::Finding> error_findings(const ProcessTrace& trace, const std::set<uint64_t>& explained,
                                            StackResolver& stacks, FailureJudge& failures,
                                            const ErrorCheckOptions& options);

// The call sites of successful allocations and releases, collected during the replay.
class MemoryCallSites : public ReplayObserver {
 public:
  void on_event(const Event& e) override {
    if (e.is_memory() && e.memory().result == 0) sites_.emplace(e.stack_id, e.memory().api);
  }
  const std::map<uint64_t, Api>& sites() const { return sites_; }

 private:
  std::map<uint64_t, Api> sites_;  // stack -> the API first called there
};

}  // namespace cuaudit
