// What the host program's debug information (DWARF, from -g) declares of a kernel's pointer
// parameters: the alignment of the type each points to when the program declared one
// (`struct __align__(16) Particle`, `alignas(32)`, CUDA's own `float4`), also for pointers inside
// by-value struct parameters. nvcc's host-side wrapper of a kernel carries the kernel's mangled
// name and parameter types. Read with elfutils' libdw.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>

namespace cuaudit {

struct DeclaredPointer {
  uint32_t alignment = 0;  // declared alignment of the pointee (DW_AT_alignment); 0: none declared
  std::string pointee;     // its name as declared ("Particle")
};

// Pointers of one kernel's parameters, by (parameter index << 16 | offset inside the parameter).
using DeclaredPointers = std::map<uint32_t, DeclaredPointer>;

inline uint32_t declared_key(uint16_t param_index, uint16_t member_offset) {
  return uint32_t{param_index} << 16 | member_offset;
}

// The pointers `kernel` (mangled name) takes, from the debug information of the ELF object at
// `path`; nullopt when the object has none or does not describe the kernel.
std::optional<DeclaredPointers> declared_pointers(const std::string& path, const std::string& kernel);

}  // namespace cuaudit
