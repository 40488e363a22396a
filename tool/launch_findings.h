// Kernel launch parameter findings: misaligned vector pointers, pointers into freed memory and
// pointers into pageable host memory, one per (launch stack, kernel, parameter, kind), counted
// over the launches they happened in.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "replay.h"
#include "report_model.h"
#include "stack_resolver.h"

namespace cuaudit {

std::vector<report::Finding> launch_findings(const ProcessTrace& trace, const std::vector<LaunchParamJudgement>& judged,
                                             StackResolver& stacks);

// "write4(float4*, int)" for a mangled name, the name itself when it is not a C++ one.
std::string kernel_display_name(const std::string& name);

// The type of parameter `index` as the kernel's name declares it ("float4*"), or empty.
std::string kernel_param_type(const std::string& name, uint16_t index);

// What the pointee of pointer parameter `index` requires as the kernel's name declares it (the
// alignment the target checks); 0 for a parameter that is no pointer, or an unknown pointee.
uint32_t kernel_pointer_alignment(const std::string& name, uint16_t index);

}  // namespace cuaudit
