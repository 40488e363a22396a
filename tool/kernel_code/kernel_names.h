// What a kernel's name (as the driver gives it: mangled for C++ kernels) says: how reports name
// it, its parameters' declared types and their pointees' alignment. Facts, not judgements: the
// enrichment of launch facts (kernel_access, declared_types) and the launch check both read them.
#pragma once

#include <cstdint>
#include <string>

namespace cuaudit {

// "write4(float4*, int)" for a mangled name, the name itself when it is not a C++ one.
std::string kernel_display_name(const std::string& name);

// The type of parameter `index` as the kernel's name declares it ("float4*"), or empty.
std::string kernel_param_type(const std::string& name, uint16_t index);

// What the pointee of pointer parameter `index` requires as the kernel's name declares it (the
// alignment the target checks); 0 for a parameter that is no pointer, or an unknown pointee.
uint32_t kernel_pointer_alignment(const std::string& name, uint16_t index);

}  // namespace cuaudit
