// What makes two findings the same bug across runs, ranks and recompilations: kind, API, result,
// the kernel parameter (launch findings), and the functions and files of the stack's frames. Not
// addresses, pids or line numbers, so that recompiling or editing unrelated lines does not make an
// old finding new. Baselines, `cuaudit diff`, `cuaudit merge` and SARIF's partialFingerprints use it.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "report_model.h"

namespace cuaudit::report {

// The fingerprint as text: "leak|cudaMalloc||process_batch(int)@demo_leaks.cu;main@demo_leaks.cu;".
std::string finding_fingerprint(const Finding& finding);

// 64-bit FNV-1a of `text`: the same on every platform and standard library (SARIF writes it in hex
// as cuauditFingerprint/v2).
uint64_t stable_hash(std::string_view text);

// One line naming a finding for people: "leak cudaMalloc at process_batch (demo_leaks.cu)".
std::string describe_finding(const Finding& finding);

}  // namespace cuaudit::report
