// --pprof's sites: every allocation site of a process with what it allocated over the run, holds
// at the end and held at its device's peak (report::ProfileSite), from the replay's site history
// and the timeline's peaks.
#pragma once

#include <vector>

#include "report_model.h"
#include "site_history.h"
#include "stack_resolver.h"
#include "timeline.h"
#include "trace_model.h"

namespace cuaudit {

// Appends the sites of `trace` to `report.profile_sites`, biggest at the end first (and says when
// its stacks were sampled). `timeline` gives the peaks (a process without memory samples has none:
// its sites' peak figures are 0).
void add_profile_sites(const ProcessTrace& trace, const SiteHistory& history, const TimelineObserver& timeline,
                       StackResolver& stacks, report::Report& report);

}  // namespace cuaudit
