// The versioned JSON report (schema cuaudit.report.v1, documented in docs/JSON.md).
#pragma once

#include <string>

#include "report_model.h"

namespace cuaudit::report {

std::string render_json(const Report& report);

}  // namespace cuaudit::report
