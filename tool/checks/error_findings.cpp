#include "error_findings.h"

#include <map>
#include <tuple>
#include <unordered_map>

#include <fmt/format.h>

#include "result_names.h"

namespace cuaudit {
namespace {

// Not failures a program must handle: shutdown (cudaErrorCudartUnloading and
// CUDA_ERROR_DEINITIALIZED, both 4), polling's "not yet" (600), and peer access already
// enabled / not enabled (704, 705), which compute-sanitizer exempts too.
bool is_exempt(int32_t result) { return result == 4 || result == 600 || result == 704 || result == 705; }

bool is_failure(const Event& e) {
  switch (e.kind) {
    case EventKind::Alloc:
    case EventKind::Free:
    case EventKind::FailedCall:
      return e.call_result() != 0 && !is_exempt(e.call_result());
    default:
      return false;
  }
}

bool is_launch(const std::string& api) { return api.rfind("cudaLaunch", 0) == 0; }

struct Judged {
  const Event* event;
  std::string api;
  ErrorHandling handling;
  bool replaced;            // launch errors: another error came before any retrieval (else the program ended)
  std::string garbage_use;  // failed allocations: where the pointer they left was used next
};

// A failed allocation leaves whatever was in the pointer (nullptr, or garbage): the first failed
// copy or memset on the same thread that was given that value is where the program used it.
std::string garbage_use(const ProcessTrace& trace, const Event& failed_allocation, StackResolver& stacks) {
  if (failed_allocation.kind != EventKind::Alloc) return {};
  const uint64_t left_behind = failed_allocation.memory().key;
  for (const Event& e : trace.events) {
    if (e.seq <= failed_allocation.seq || e.kind != EventKind::FailedCall || e.tid != failed_allocation.tid) continue;
    auto p = trace.call_pointers.find(e.seq);
    if (p == trace.call_pointers.end()) continue;
    if (p->second[0] != left_behind && p->second[1] != left_behind) continue;
    return fmt::format("the pointer it left behind (0x{:x}) was then given to {} at {}, which failed with {}",
                       left_behind, event_api_name(trace, e), stacks.call_site(e.stack_id),
                       result_name(ApiLayer::Runtime, e.call().result));
  }
  return {};
}

// Per thread, in order: was each runtime failure retrieved by a last-error call before the next
// runtime failure replaced it?
std::unordered_map<uint64_t, std::pair<bool, bool>> retrievals(const ProcessTrace& trace) {
  std::unordered_map<uint64_t, std::pair<bool, bool>> out;  // seq -> {retrieved, replaced}
  std::unordered_map<uint32_t, uint64_t> pending;           // tid -> seq of its last runtime failure
  for (const Event& e : trace.events) {
    if (e.kind == EventKind::LastError) {
      if (auto it = pending.find(e.tid); it != pending.end()) {
        out[it->second].first = true;
        pending.erase(it);
      }
    } else if (is_failure(e) && api_layer(event_api_name(trace, e)) == ApiLayer::Runtime) {
      if (auto it = pending.find(e.tid); it != pending.end()) out[it->second].second = true;
      pending[e.tid] = e.seq;
      out[e.seq];
    }
  }
  return out;
}

std::string times(uint64_t count) { return count > 1 ? fmt::format(" ({} times)", count) : std::string(); }

report::Finding describe(const Judged& j, uint64_t count, uint64_t pid, StackResolver& stacks) {
  const Event& e = *j.event;
  const ApiLayer layer = api_layer(j.api);
  const std::string name = result_name(layer, e.call_result());
  const std::string text = result_text(layer, e.call_result());
  report::Finding f;
  f.api = j.api;
  f.count = count;
  f.pid = pid;
  f.result = name;
  if (e.is_memory() && e.memory().device >= 0) f.device = e.memory().device;
  f.stack = stacks.user_stack(e.stack_id);
  if (j.handling == ErrorHandling::Unchecked) {
    f.kind = report::FindingKind::UncheckedError;
    f.severity = report::Severity::Error;
    f.headline = fmt::format("Unchecked error: {} returned {} and the program never looked at it{}, at:", j.api, name,
                             times(count));
    const std::string why =
        is_launch(j.api)
            ? fmt::format(
                  "a launch's error is seen only through cudaGetLastError or cudaPeekAtLastError, and none "
                  "retrieved it before {}",
                  j.replaced ? "another error replaced it" : "the program ended")
            : "the call site discards the return value, and no cudaGetLastError or cudaPeekAtLastError retrieved it";
    f.message = fmt::format("{} failed with {} and the program never looked at the result: {}", j.api, name, why);
    f.notes.push_back(why);
  } else {
    f.kind = report::FindingKind::ApiError;
    f.severity = report::Severity::Info;
    f.headline = fmt::format("Handled error: {} returned {}{} at:", j.api, name, times(count));
    const char* how =
        j.handling == ErrorHandling::CheckedAtCallSite ? "the program checked the result at the call site"
        : j.handling == ErrorHandling::RetrievedLater
            ? "the program retrieved it with cudaGetLastError or cudaPeekAtLastError"
            : "cuaudit could not follow the machine code at the call site, so it does not call it unchecked";
    f.message = fmt::format("{} failed with {}; {}", j.api, name, how);
    f.notes.push_back(how);
  }
  if (!j.garbage_use.empty()) f.notes.push_back(j.garbage_use);
  if (!text.empty()) f.notes.push_back(fmt::format("{}: {}", name, text));
  return f;
}

}  // namespace

FailureJudge::FailureJudge(const ProcessTrace& trace, StackResolver& stacks, CallSiteJudge& judge)
    : stacks_(stacks), judge_(judge), retrieved_(retrievals(trace)) {}

ErrorHandling FailureJudge::handling(const Event& e, const std::string& api) {
  const bool runtime = api_layer(api) == ApiLayer::Runtime;
  const auto r = retrieved_.find(e.seq);
  const bool got = r != retrieved_.end() && r->second.first;
  return decide_error_handling(is_launch(api), runtime, result_use(e.stack_id), got);
}

ResultUse FailureJudge::result_use(uint64_t stack_id) { return judge_.for_call(stacks_.user_raw_frames(stack_id)); }

bool FailureJudge::replaced(const Event& e) const {
  const auto r = retrieved_.find(e.seq);
  return r != retrieved_.end() && r->second.second;
}

std::string garbage_pointer_use(const ProcessTrace& trace, const Event& failed_allocation, StackResolver& stacks) {
  return garbage_use(trace, failed_allocation, stacks);
}

ErrorHandling decide_error_handling(bool launch, bool runtime_api, ResultUse call_site, bool retrieved_later) {
  if (call_site == ResultUse::Used) return ErrorHandling::CheckedAtCallSite;
  if (runtime_api && retrieved_later) return ErrorHandling::RetrievedLater;
  if (launch) return ErrorHandling::Unchecked;  // the last-error rule is the whole story for launches
  if (call_site == ResultUse::Discarded) return ErrorHandling::Unchecked;
  return ErrorHandling::Undecided;  // never guess "unchecked"
}

std::vector<report::Finding> error_findings(const ProcessTrace& trace, const std::set<uint64_t>& explained,
                                            StackResolver& stacks, FailureJudge& failures,
                                            const ErrorCheckOptions& options) {
  MemoryCallSites sites;
  if (options.check_api_results) {
    for (const Event& e : trace.events) sites.on_event(e);
  }
  return error_findings(trace, explained, stacks, failures, options, sites.sites());
}

std::vector<report::Finding> error_findings(const ProcessTrace& trace, const std::set<uint64_t>& explained,
                                            StackResolver& stacks, FailureJudge& failures,
                                            const ErrorCheckOptions& options,
                                            const std::map<uint64_t, Api>& memory_call_sites) {
  // Same outcome, same API, same error, same stack: one finding with a count, in first-seen order.
  std::map<std::tuple<int, std::string, int32_t, uint64_t>, std::pair<Judged, uint64_t>> groups;
  std::vector<decltype(groups)::key_type> order;
  auto add = [&](const Judged& j) {
    const auto key = std::make_tuple(static_cast<int>(j.handling), j.api, j.event->call_result(), j.event->stack_id);
    auto [it, inserted] = groups.try_emplace(key, j, 0);
    if (inserted) order.push_back(key);
    ++it->second.second;
  };

  std::map<uint64_t, std::string> lint_sites;  // stack -> api, for --check-api-results
  if (options.check_api_results) {
    for (const auto& [stack_id, api] : memory_call_sites) {
      lint_sites.emplace(stack_id, api_info(stacks.api_called(stack_id, api)).name);
    }
  }
  for (const Event& e : trace.events) {
    std::string api = event_api_name(trace, e);
    if (e.is_memory()) api = api_info(stacks.api_called(e.stack_id, e.memory().api)).name;
    if (options.check_api_results && !is_launch(api) && e.kind == EventKind::CallSite)
      lint_sites.emplace(e.stack_id, api);
    if (!is_failure(e) || explained.count(e.seq)) continue;
    add({&e, api, failures.handling(e, api), failures.replaced(e), garbage_use(trace, e, stacks)});
  }

  std::vector<report::Finding> findings;
  for (const auto& key : order) {
    const auto& [judged, count] = groups.at(key);
    findings.push_back(describe(judged, count, trace.pid, stacks));
  }
  for (const auto& [stack_id, api] : lint_sites) {
    if (failures.result_use(stack_id) != ResultUse::Discarded) continue;
    report::Finding f;
    f.kind = report::FindingKind::UncheckedError;
    f.severity = report::Severity::Warning;
    f.api = api;
    f.count = 1;
    f.pid = trace.pid;
    f.headline = fmt::format("Unchecked result: the value {} returns is discarded at:", api);
    f.message = fmt::format("the call site discards what {} returns; check every CUDA call's result", api);
    f.stack = stacks.user_stack(stack_id);
    findings.push_back(std::move(f));
  }
  return findings;
}

}  // namespace cuaudit
