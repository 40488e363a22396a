#include "checks.h"

#include "check_options.h"
#include "churn_findings.h"
#include "device_heap_findings.h"
#include "error_findings.h"
#include "fragmentation_findings.h"
#include "growth_findings.h"
#include "launch_findings.h"
#include "leak_findings.h"
#include "oom_findings.h"
#include "release_findings.h"
#include "site_growth_findings.h"

namespace cuaudit {
namespace {

// Release misuse first: the failures it explains are not reported again as errors.
class ReleaseCheck : public Check {
 public:
  std::vector<report::Finding> findings(CheckContext& c) override {
    for (const auto& p : c.result.release_findings) c.explained.insert(p.release.seq);
    return release_findings(c.result.release_findings, c.trace, c.stacks);
  }
};

class OutOfMemoryCheck : public Check {
 public:
  explicit OutOfMemoryCheck(const ProcessTrace& t) : observer_(t.stack_sampling) {}
  ReplayObserver* observer() override { return &observer_; }
  std::vector<report::Finding> findings(CheckContext& c) override {
    return oom_findings(c.trace, observer_, c.stacks, c.failures, c.explained);
  }

 private:
  OomObserver observer_;
};

class ChurnCheck : public Check {
 public:
  ReplayObserver* observer() override { return &counter_; }
  std::vector<report::Finding> findings(CheckContext& c) override {
    return churn_findings(c.trace, counter_, c.bounds.run_ns(c.trace), c.stacks, c.options.churn);
  }

 private:
  ChurnCounter counter_;
};

class MigrationCheck : public Check {
 public:
  ReplayObserver* observer() override { return &ranges_; }
  std::vector<report::Finding> findings(CheckContext& c) override {
    return migration_findings(c.trace, ranges_, c.stacks, c.options.migration);
  }

 private:
  ManagedRanges ranges_;
};

class DeviceHeapCheck : public Check {
 public:
  std::vector<report::Finding> findings(CheckContext& c) override { return device_heap_findings(c.trace, c.stacks); }
};

class FragmentationCheck : public Check {
 public:
  FragmentationCheck(const ProcessTrace& trace, const FragmentationOptions& options)
      : observer_(trace.pools, options) {}
  ReplayObserver* observer() override { return &observer_; }
  std::vector<report::Finding> findings(CheckContext& c) override {
    return fragmentation_findings(c.trace, observer_, c.bounds, c.stacks, c.options.fragmentation);
  }

 private:
  FragmentationObserver observer_;
};

class ErrorCheck : public Check {
 public:
  explicit ErrorCheck(bool call_sites) : call_sites_(call_sites) {}
  // The call sites of successful allocations, for --check-api-results only.
  ReplayObserver* observer() override { return call_sites_ ? &sites_ : nullptr; }
  std::vector<report::Finding> findings(CheckContext& c) override {
    return error_findings(c.trace, c.explained, c.stacks, c.failures, {c.options.check_api_results}, sites_.sites());
  }

 private:
  bool call_sites_;
  MemoryCallSites sites_;
};

class LaunchCheck : public Check {
 public:
  std::vector<report::Finding> findings(CheckContext& c) override {
    return launch_findings(c.trace, c.result.launch_params, c.stacks);
  }
};

class LeakCheck : public Check {
 public:
  std::vector<report::Finding> findings(CheckContext& c) override {
    return leak_findings(c.trace, c.result, c.stacks, c.holders);
  }
};

class PythonGrowthCheck : public Check {
 public:
  explicit PythonGrowthCheck(const ProcessTrace& trace) : observer_(trace) {}
  ReplayObserver* observer() override { return &observer_; }
  std::vector<report::Finding> findings(CheckContext& c) override {
    return growth_findings(c.trace, observer_, c.bounds, c.result.leaks, c.result.ownership, c.stacks);
  }

 private:
  GrowthObserver observer_;
};

class SiteGrowthCheck : public Check {
 public:
  std::vector<report::Finding> findings(CheckContext& c) override {
    return site_growth_findings(c.trace, c.history, c.stacks);
  }
};

template <typename C>
std::unique_ptr<Check> make(const ProcessTrace&, const CheckOptions&) {
  return std::make_unique<C>();
}
bool always(const CheckOptions&) { return true; }
bool leaks_checked(const CheckOptions& o) { return o.check_leaks; }

// The checks of one process, in the order the report lists their findings: each a name, what
// turns it on, and how it is made. Release misuse comes first: the failures it explains are not
// reported again as errors (CheckContext::explained).
struct CheckRow {
  const char* name;  // what the row is, for the reader of this table
  bool (*enabled)(const CheckOptions&);
  std::unique_ptr<Check> (*make)(const ProcessTrace&, const CheckOptions&);
};
const CheckRow kChecks[] = {
    {"release misuse", always, make<ReleaseCheck>},
    {"out of memory", always,
     [](const ProcessTrace& t, const CheckOptions&) -> std::unique_ptr<Check> {
       return std::make_unique<OutOfMemoryCheck>(t);
     }},
    {"allocation churn", always, make<ChurnCheck>},
    {"managed memory migrations", always, make<MigrationCheck>},
    {"device heap (--device-heap)", always, make<DeviceHeapCheck>},
    {"pool fragmentation", always,
     [](const ProcessTrace& t, const CheckOptions& o) -> std::unique_ptr<Check> {
       return std::make_unique<FragmentationCheck>(t, o.fragmentation);
     }},
    {"errors", always,
     [](const ProcessTrace&, const CheckOptions& o) -> std::unique_ptr<Check> {
       return std::make_unique<ErrorCheck>(o.check_api_results);
     }},
    {"launch parameters", always, make<LaunchCheck>},
    {"leaks", leaks_checked, make<LeakCheck>},
    {"growth by Python line", leaks_checked,
     [](const ProcessTrace& t, const CheckOptions&) -> std::unique_ptr<Check> {
       return std::make_unique<PythonGrowthCheck>(t);
     }},
    {"growth by site", leaks_checked, make<SiteGrowthCheck>},
};

}  // namespace

std::vector<report::UncheckedKind> unchecked_kinds(const CheckOptions& options,
                                                   std::optional<bool> launch_params_recorded,
                                                   std::optional<bool> resources_recorded) {
  using report::FindingKind;
  std::vector<report::UncheckedKind> out;
  if (!leaks_checked(options)) {
    for (FindingKind k : {FindingKind::Leak, FindingKind::HeldByAllocator, FindingKind::Growth, FindingKind::Live,
                          FindingKind::ResourceLeak})
      out.push_back({k, "--leak-check no"});
  }
  if (launch_params_recorded == false) {
    for (FindingKind k : {FindingKind::MisalignedParam, FindingKind::StalePointerParam, FindingKind::HostPointerParam,
                          FindingKind::PeerPointerParam})
      out.push_back({k, "recorded with --check-launch-params no"});
  }
  if (resources_recorded == false && leaks_checked(options))
    out.push_back({FindingKind::ResourceLeak, "recorded without --track-resources"});
  return out;
}

std::vector<std::unique_ptr<Check>> make_checks(const ProcessTrace& trace, const CheckOptions& options) {
  std::vector<std::unique_ptr<Check>> checks;
  for (const CheckRow& row : kChecks) {
    if (row.enabled(options)) checks.push_back(row.make(trace, options));
  }
  return checks;
}

}  // namespace cuaudit
