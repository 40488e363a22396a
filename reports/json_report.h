// The versioned JSON report (schema cuaudit.report.v1, documented in docs/JSON.md), written and
// read: report_from_json is the exact inverse of report_to_json (tests/unit/test_json_roundtrip.cpp),
// so that baselines, `cuaudit diff` and `cuaudit merge` work on the report model like a fresh run.
#pragma once

#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

#include "report_model.h"

namespace cuaudit::report {

nlohmann::json report_to_json(const Report& report);
// One finding as the report's "findings" array holds it (`cuaudit diff --json` uses it too).
nlohmann::json finding_to_json(const Finding& f);
std::string render_json(const Report& report);

// A document that is not a cuaudit report, or one whose fields have the wrong types.
class ReportFormatError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Reads a document of schema cuaudit.report.v1. Fields it does not know are ignored (a newer
// cuaudit may add some); missing optional fields take their defaults.
Report report_from_json(const nlohmann::json& doc);

}  // namespace cuaudit::report
