// What a kernel's machine code requires of its pointer parameters (issue 17, first part): the
// widest global memory access made through each parameter, read from the SASS that the CUDA
// toolkit's own disassembler prints (`nvdisasm -json`). `LDG.E.128 ... [R4.64]` where R4 is
// parameter 0 plus an index times 16 means parameter 0 must be 16-byte aligned.
//
// The analysis follows a parameter from its constant-bank load (`LDC.64 R4, c[0x0][0x210]`)
// through the simple cases only: moves, `IMAD.WIDE` / `IADD3` / `LEA` adding an index times a
// constant, and an immediate offset in the access itself. Register state is forgotten at every
// branch target, so a value is only followed within the straight-line code that computed it. An
// access whose address it cannot follow, or whose added offset is not a multiple of the access
// width, requires nothing; so does every access through a parameter whose own low bits the kernel
// tests (`LOP3.LUT P0, RZ, R2, 0xf, ...`: it checks its alignment itself and takes another path).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace cuaudit {

// What one kernel's code says of the parameter at one offset in the parameter constant bank
// (sm_90: parameters start at 0x210; the offset here is relative to that start).
struct ParamAccess {
  uint32_t width = 0;    // widest access whose address is the parameter plus multiples of it
  bool guarded = false;  // the kernel tests the parameter's low bits: nothing is required
  // What the launch must satisfy: the width, unless guarded.
  uint32_t required_alignment() const { return guarded ? 0 : width; }
};

struct KernelAccess {
  std::string name;                        // mangled, as nvdisasm names the function
  std::map<uint32_t, ParamAccess> params;  // offset from the first parameter -> what is required
};

// Every function of one `nvdisasm -json` output. `param_base` is where parameters start in
// constant bank 0 (0x210 on sm_90; EIATTR_PARAM_CBANK of the cubin says). Throws
// std::runtime_error when the text is not nvdisasm's JSON.
std::vector<KernelAccess> analyze_sass_json(std::string_view json_text, uint32_t param_base = 0x210);

}  // namespace cuaudit
