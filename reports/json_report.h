// The versioned JSON report (schema cuaudit.report.v1, documented in docs/JSON.md).
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "report_model.h"

namespace cuaudit::report {

std::string render_json(const Report& report);

// One finding as the JSON report writes it (for fingerprints and the other formats).
nlohmann::json finding_to_json(const Finding& finding);

}  // namespace cuaudit::report
