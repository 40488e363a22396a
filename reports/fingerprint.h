// What makes two findings the same bug across runs, ranks and recompilations: kind, API, result,
// and the functions and files of the stack's frames. Not addresses, pids or line numbers, so
// that recompiling or editing unrelated lines does not make an old finding new.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace cuaudit {

// From a finding of a JSON report (schema cuaudit.report.v1).
std::string finding_fingerprint(const nlohmann::json& finding);

// One line naming a finding for people: "leak cudaMalloc at process_batch (demo_leaks.cu)".
std::string describe_finding(const nlohmann::json& finding);

}  // namespace cuaudit
