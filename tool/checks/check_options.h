// What the checks are asked to do (the command line fills it, inside AnalysisOptions): which
// checks run and their thresholds. The checks' own, so that the check table needs nothing from
// the stage above it (tool/analysis_options.h embeds it).
#pragma once

#include "churn_findings.h"
#include "fragmentation_findings.h"
#include "migration_findings.h"

namespace cuaudit {

struct CheckOptions {
  bool check_leaks = true;             // --leak-check no turns leak findings off
  bool check_api_results = false;      // also lint discarded results of successful calls
  ChurnOptions churn;                  // --churn-threshold
  FragmentationOptions fragmentation;  // --fragmentation-threshold
  MigrationOptions migration;          // managed memory's round trips
};

}  // namespace cuaudit
