// Reading .eh_frame as the stack walk needs it (cfi_unwinder.cpp): LEB128 and pointer encodings, a
// CIE's alignment factors and return-address column, and the CFA program (DW_CFA_*) run up to an
// instruction address, reduced to the rules for the CFA, rbp and the return address. Pure
// functions over bytes: no allocation, no lock, safe inside a CUPTI callback.
#pragma once

#include <cstdint>
#include <cstring>

namespace cuaudit::inject {

constexpr unsigned kRbp = 6, kRsp = 7;  // DWARF register numbers on x86-64

struct Reader {
  const uint8_t* p;
  const uint8_t* end;
  bool ok = true;

  template <typename T>
  T fixed() {
    T v{};
    if (p + sizeof v > end) {
      ok = false;
      return v;
    }
    memcpy(&v, p, sizeof v);
    p += sizeof v;
    return v;
  }
  uint64_t uleb() {
    uint64_t v = 0;
    for (unsigned shift = 0; p < end && shift < 64; shift += 7) {
      const uint8_t b = *p++;
      v |= static_cast<uint64_t>(b & 0x7f) << shift;
      if (!(b & 0x80)) return v;
    }
    ok = false;
    return v;
  }
  int64_t sleb() {
    int64_t v = 0;
    unsigned shift = 0;
    uint8_t b = 0;
    do {
      if (p >= end || shift >= 64) {
        ok = false;
        return v;
      }
      b = *p++;
      v |= static_cast<int64_t>(b & 0x7f) << shift;
      shift += 7;
    } while (b & 0x80);
    if (shift < 64 && (b & 0x40)) v |= -(int64_t{1} << shift);
    return v;
  }
  // Skips a pointer in DW_EH_PE `encoding` (only its size matters here).
  void skip_encoded(uint8_t encoding) {
    if (encoding == 0xff) return;  // DW_EH_PE_omit
    switch (encoding & 0x0f) {
      case 0x00:
        p += 8;
        break;  // absptr
      case 0x01:
        uleb();
        break;  // uleb128
      case 0x02:
      case 0x0a:
        p += 2;
        break;
      case 0x03:
      case 0x0b:
        p += 4;
        break;
      case 0x04:
      case 0x0c:
        p += 8;
        break;
      case 0x09:
        sleb();
        break;  // sleb128
      default:
        ok = false;
    }
    if (p > end) ok = false;
  }
};

struct Cie {
  uint64_t code_align = 1;
  int64_t data_align = -8;
  uint64_t ra_column = 16;
  uint8_t fde_encoding = 0;
  bool has_augmentation_data = false;
  const uint8_t* instructions = nullptr;
  const uint8_t* end = nullptr;
};

// Reads the CIE at `cie` (its length word first). False for a CIE this walker does not follow
// (64-bit .eh_frame, signal frames, unknown augmentations).
bool parse_cie(const uint8_t* cie, Cie& out);

// The rule state of the CFA program as it runs.
struct RowState {
  unsigned cfa_register = kRsp;
  int64_t cfa_offset = 8;
  bool cfa_deref = false;  // CFA = *(cfa_register + cfa_offset)
  enum How : uint8_t { Unchanged, Saved, SavedAtRbp, Undefined, Bad } ra = Unchanged, rbp = Unchanged;
  int64_t ra_offset = 0, rbp_offset = 0;
  bool cfa_bad = false;
};

// Runs CFA instructions while the location is at most `target`. Returns false on an instruction
// this walker does not follow.
bool run_cfa(Reader r, const Cie& cie, uint64_t location, uint64_t target, RowState& row, const RowState& initial);

}  // namespace cuaudit::inject
