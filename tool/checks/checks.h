// The checks of a process, declared once. A check is one file (its findings, and the observer of
// the replay it needs, if any) and one row of the table in checks.cpp (its name, the options that
// turn it on, how it is made); the table's order is the order the report lists their findings in.
// Every check of a process sees the same single replay of its events (the pipeline's ProcessChecks
// stage, tool/pipeline.h); what spans processes is the RunChecks stage.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "holders.h"
#include "replay.h"
#include "report_model.h"
#include "run_bounds.h"
#include "site_history.h"
#include "stack_resolver.h"
#include "trace_model.h"

namespace cuaudit {

struct CheckOptions;
class FailureJudge;

// What a check reads once its process's replay is done.
struct CheckContext {
  const ProcessTrace& trace;  // metadata, and the events kept: all but the successful allocations and releases
  const ReplayResult& result;
  StackResolver& stacks;
  FailureJudge& failures;         // how each failing call was handled (shared: errors, out of memory)
  std::set<uint64_t>& explained;  // failures an earlier check reported (a double free's refused release)
  const RunBounds& bounds;        // the run's first and last facts
  const SiteHistory& history;     // live memory by site, now and over the run
  Holders& holders;               // who holds memory on purpose: asked as leaks are made
  const CheckOptions& options;
};

class Check {
 public:
  virtual ~Check() = default;
  // What it observes of the replay; null when the replay's result and the kept events are enough.
  virtual ReplayObserver* observer() { return nullptr; }
  virtual std::vector<report::Finding> findings(CheckContext& context) = 0;
};

// The finding kinds no check could find in this run, with why: turned off at report time
// (--leak-check no), or never recorded (--check-launch-params no, no --track-resources; unknown
// for runs whose run.json predates those fields: nullopt).
std::vector<report::UncheckedKind> unchecked_kinds(const CheckOptions& options,
                                                   std::optional<bool> launch_params_recorded,
                                                   std::optional<bool> resources_recorded);

// The checks `options` turns on, made for one process's trace, in the table's order.
std::vector<std::unique_ptr<Check>> make_checks(const ProcessTrace& trace, const CheckOptions& options);

}  // namespace cuaudit
