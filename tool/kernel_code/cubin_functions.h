// The kernels of a cubin (a CUDA ELF object as the driver loads it): their names, their symbol
// indices (what `nvdisasm -fun` selects by) and where their parameters start in constant bank 0
// (EIATTR_PARAM_CBANK of the kernel's .nv.info section: 0x210 on sm_90, 0x160 on older GPUs).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace cuaudit {

// The largest kept cubin the tool reads whole.
inline constexpr size_t kMaxCubinBytes = size_t{2} << 30;

struct CubinFunction {
  std::string name;  // as the symbol table spells it (mangled for C++ kernels)
  uint32_t symbol_index = 0;
  uint32_t param_base = 0x210;  // where parameters start in c[0x0][...]
};

// Every function symbol of `image`; empty when it is not a 64-bit little-endian ELF object (a
// damaged or foreign file is no kernel code, not an error).
std::vector<CubinFunction> cubin_functions(std::string_view image);

}  // namespace cuaudit
