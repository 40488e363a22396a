#include "checks.h"

#include "analysis.h"
#include "churn_findings.h"
#include "error_findings.h"
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
  std::vector<report::Finding> findings(CheckContext& c) override { return leak_findings(c.trace, c.result, c.stacks); }
};

class PythonGrowthCheck : public Check {
 public:
  explicit PythonGrowthCheck(const ProcessTrace& trace) : observer_(trace) {}
  ReplayObserver* observer() override { return &observer_; }
  std::vector<report::Finding> findings(CheckContext& c) override {
    return growth_findings(c.trace, observer_, c.bounds, c.result.leaks, c.stacks);
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

}  // namespace

std::vector<std::unique_ptr<Check>> make_checks(const ProcessTrace& trace, const AnalysisOptions& options) {
  std::vector<std::unique_ptr<Check>> checks;
  checks.push_back(std::make_unique<ReleaseCheck>());
  checks.push_back(std::make_unique<OutOfMemoryCheck>());
  checks.push_back(std::make_unique<ChurnCheck>());
  checks.push_back(std::make_unique<ErrorCheck>(options.check_api_results));
  checks.push_back(std::make_unique<LaunchCheck>());
  if (options.check_leaks) {
    checks.push_back(std::make_unique<LeakCheck>());
    checks.push_back(std::make_unique<PythonGrowthCheck>(trace));
    checks.push_back(std::make_unique<SiteGrowthCheck>());
  }
  return checks;
}

}  // namespace cuaudit
