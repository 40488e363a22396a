// SARIF 2.1.0 for code scanning (GitHub and others): one rule per finding kind, each result
// located at its first frame with a source file, paths relative to the source root, and a stable
// fingerprint (the one baselines use).
#pragma once

#include <string>

#include "report_model.h"

namespace cuaudit::report {

// `source_root`: an absolute directory; files under it are written relative to it (uriBaseId
// %SRCROOT%), others as absolute file URIs.
std::string render_sarif(const Report& report, const std::string& source_root);

}  // namespace cuaudit::report
