#include "kernel_signature.h"

#include <cxxabi.h>

#include <cstdlib>
#include <cstring>

namespace cuaudit {
namespace {

struct TypeAlignment {
  const char* name;
  uint32_t alignment;
};

// Scalars by their demangled spelling (typedefs such as int8_t or size_t arrive resolved), and
// the CUDA vector types with the alignment vector_types.h gives them (the 3-element ones are
// aligned like their element). CUDA 13 spells the 256-bit ones double4_16a / double4_32a.
constexpr TypeAlignment kAlignments[] = {
    {"bool", 1},
    {"char", 1},
    {"signed char", 1},
    {"unsigned char", 1},
    {"char8_t", 1},
    {"short", 2},
    {"unsigned short", 2},
    {"char16_t", 2},
    {"wchar_t", 4},
    {"char32_t", 4},
    {"int", 4},
    {"unsigned int", 4},
    {"float", 4},
    {"long", 8},
    {"unsigned long", 8},
    {"long long", 8},
    {"unsigned long long", 8},
    {"double", 8},
    {"__int128", 16},
    {"unsigned __int128", 16},
    {"__half", 2},
    {"half", 2},
    {"__nv_bfloat16", 2},
    {"__half2", 4},
    {"half2", 4},
    {"__nv_bfloat162", 4},
    {"__nv_fp8_e4m3", 1},
    {"__nv_fp8_e5m2", 1},
    {"__nv_fp8x2_e4m3", 2},
    {"__nv_fp8x2_e5m2", 2},
    {"__nv_fp8x4_e4m3", 4},
    {"__nv_fp8x4_e5m2", 4},
    {"char1", 1},
    {"uchar1", 1},
    {"char2", 2},
    {"uchar2", 2},
    {"char3", 1},
    {"uchar3", 1},
    {"char4", 4},
    {"uchar4", 4},
    {"short1", 2},
    {"ushort1", 2},
    {"short2", 4},
    {"ushort2", 4},
    {"short3", 2},
    {"ushort3", 2},
    {"short4", 8},
    {"ushort4", 8},
    {"int1", 4},
    {"uint1", 4},
    {"int2", 8},
    {"uint2", 8},
    {"int3", 4},
    {"uint3", 4},
    {"int4", 16},
    {"uint4", 16},
    {"long1", 8},
    {"ulong1", 8},
    {"long2", 16},
    {"ulong2", 16},
    {"long3", 8},
    {"ulong3", 8},
    {"long4", 16},
    {"ulong4", 16},
    {"long4_16a", 16},
    {"ulong4_16a", 16},
    {"long4_32a", 32},
    {"ulong4_32a", 32},
    {"longlong1", 8},
    {"ulonglong1", 8},
    {"longlong2", 16},
    {"ulonglong2", 16},
    {"longlong3", 8},
    {"ulonglong3", 8},
    {"longlong4", 16},
    {"ulonglong4", 16},
    {"longlong4_16a", 16},
    {"ulonglong4_16a", 16},
    {"longlong4_32a", 32},
    {"ulonglong4_32a", 32},
    {"float1", 4},
    {"float2", 8},
    {"float3", 4},
    {"float4", 16},
    {"double1", 8},
    {"double2", 16},
    {"double3", 8},
    {"double4", 16},
    {"double4_16a", 16},
    {"double4_32a", 32},
};

bool is_space(char c) { return c == ' ' || c == '\t'; }

// Drops leading and trailing spaces of [b, e).
void trim(const char*& b, const char*& e) {
  while (b < e && is_space(*b)) ++b;
  while (e > b && is_space(e[-1])) --e;
}

// Removes `word` from the end of [b, e) when it is a whole word there.
bool drop_trailing_word(const char* b, const char*& e, const char* word) {
  const size_t n = strlen(word);
  if (static_cast<size_t>(e - b) < n || memcmp(e - n, word, n) != 0) return false;
  if (e - n > b && !(is_space(e[-n - 1]) || e[-n - 1] == '*')) return false;
  e -= n;
  return true;
}

bool drop_leading_word(const char*& b, const char* e, const char* word) {
  const size_t n = strlen(word);
  if (static_cast<size_t>(e - b) <= n || memcmp(b, word, n) != 0 || !is_space(b[n])) return false;
  b += n;
  return true;
}

// cv-qualifiers and restrict on either side of a type.
void strip_qualifiers(const char*& b, const char*& e) {
  for (bool again = true; again;) {
    trim(b, e);
    again = drop_trailing_word(b, e, "const") || drop_trailing_word(b, e, "volatile") ||
            drop_trailing_word(b, e, "__restrict__") || drop_trailing_word(b, e, "__restrict") ||
            drop_trailing_word(b, e, "restrict") || drop_leading_word(b, e, "const") ||
            drop_leading_word(b, e, "volatile");
  }
}

void classify(const char* b, const char* e, KernelParam& p) {
  strip_qualifiers(b, e);
  if (b == e || e[-1] != '*') return;  // by value (integers, structs, function pointers end in ')')
  p.is_pointer = true;
  --e;  // the pointee
  strip_qualifiers(b, e);
  if (b < e && e[-1] == '*') {
    p.alignment = 8;  // a pointer to pointers
    return;
  }
  p.alignment = type_alignment(b, static_cast<size_t>(e - b));
}

}  // namespace

uint32_t type_alignment(const char* name, size_t bytes) noexcept {
  for (const TypeAlignment& t : kAlignments) {
    if (strlen(t.name) == bytes && memcmp(t.name, name, bytes) == 0) return t.alignment;
  }
  return 0;
}

bool parse_kernel_params(const char* demangled, KernelSignature& out) noexcept {
  out = KernelSignature{};
  if (!demangled) return false;
  const char* end = demangled + strlen(demangled);
  const char* e = end;
  while (e > demangled && is_space(e[-1])) --e;
  if (e == demangled || e[-1] != ')') return false;
  // The parameter list is the last balanced (...) group.
  const char* close = e - 1;
  const char* open = nullptr;
  int depth = 0;
  for (const char* c = close; c >= demangled; --c) {
    if (*c == ')') ++depth;
    if (*c == '(' && --depth == 0) {
      open = c;
      break;
    }
  }
  if (!open) return false;
  const char* b = open + 1;
  trim(b, close);
  if (b == close || (close - b == 4 && memcmp(b, "void", 4) == 0)) {
    out.typed = true;  // no parameters
    return true;
  }
  int angle = 0, paren = 0, square = 0;
  const char* start = b;
  for (const char* c = b; c <= close; ++c) {
    const bool last = c == close;
    if (!last) {
      switch (*c) {
        case '<':
          ++angle;
          break;
        case '>':
          --angle;
          break;
        case '(':
          ++paren;
          break;
        case ')':
          --paren;
          break;
        case '[':
          ++square;
          break;
        case ']':
          --square;
          break;
        default:
          break;
      }
    }
    if (last || (*c == ',' && angle == 0 && paren == 0 && square == 0)) {
      if (out.count == kMaxKernelParams) return false;
      const char* tb = start;
      const char* te = c;
      trim(tb, te);
      KernelParam& p = out.params[out.count++];
      p.type_begin = static_cast<uint32_t>(tb - demangled);
      p.type_bytes = static_cast<uint32_t>(te - tb);
      classify(tb, te, p);
      start = c + 1;
    }
  }
  out.typed = angle == 0 && paren == 0 && square == 0;
  return out.typed;
}

char* demangle_kernel_name(const char* mangled) noexcept {
  if (!mangled || strncmp(mangled, "_Z", 2) != 0) return nullptr;
  int status = 0;
  char* text = abi::__cxa_demangle(mangled, nullptr, nullptr, &status);
  if (status != 0) {
    free(text);
    return nullptr;
  }
  return text;
}

}  // namespace cuaudit
