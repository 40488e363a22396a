// Kernel launch parameter findings: misaligned vector pointers, pointers into freed memory and
// pointers into pageable host memory, one per (launch stack, kernel, parameter, kind), counted
// over the launches they happened in.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kernel_names.h"
#include "replay.h"
#include "report_model.h"
#include "stack_resolver.h"

namespace cuaudit {

std::vector<report::Finding> launch_findings(const ProcessTrace& trace, const std::vector<LaunchParamJudgement>& judged,
                                             StackResolver& stacks);

}  // namespace cuaudit
