// What a kernel's mangled name says about its parameters: which are pointers, to what, and how
// aligned their values must be. Shared by the injection (which checks every launch against it)
// and the tool (which names the types in its findings). No CUDA, no allocation beyond the
// demangler's own.
#pragma once

#include <cstddef>
#include <cstdint>

namespace cuaudit {

struct KernelParam {
  bool is_pointer = false;
  uint32_t alignment = 0;  // a pointer's required alignment; 0: unknown pointee (not checked)
  // The parameter's type as the demangled name spells it: [type_begin, type_begin + type_bytes).
  uint32_t type_begin = 0;
  uint32_t type_bytes = 0;
};

constexpr int kMaxKernelParams = 64;

struct KernelSignature {
  bool typed = false;  // false: extern "C" or undecodable name; only parameter sizes are known
  int count = 0;       // parameters parsed (typed only)
  KernelParam params[kMaxKernelParams];
};

// Parses the parameter list of a demangled kernel name ("void fill<int4>(int4*, int)").
// Returns false when the text has no parameter list it can read.
bool parse_kernel_params(const char* demangled, KernelSignature& out) noexcept;

// Alignment CUDA requires of a value of the named type (float4: 16, double: 8, __half2: 4), or
// 0 when the type is unknown here (a user struct). `name` is the pointee, qualifiers removed.
uint32_t type_alignment(const char* name, size_t bytes) noexcept;

// Demangles `mangled` (a malloc'ed string the caller frees, or null when it is not a C++ name).
char* demangle_kernel_name(const char* mangled) noexcept;

}  // namespace cuaudit
