// JUnit XML for CI dashboards: one test suite per process, one test case per finding kind, failed
// when that kind has unsuppressed findings of severity error or warning (the finding texts are the
// failure's body); info entries (handled errors, memory held by allocators) never fail.
#pragma once

#include <string>

#include "report_model.h"

namespace cuaudit::report {

std::string render_junit(const Report& report);

// XML text and attribute escaping (&, <, >, ", ' and control characters).
std::string xml_escape(const std::string& text);

}  // namespace cuaudit::report
