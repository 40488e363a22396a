#include "cfi_unwinder.h"

#include <atomic>
#include <cstring>

namespace cuaudit::inject {

#if defined(__x86_64__)

// libgcc's lookup of the FDE covering `pc` (exported by libgcc_s since GCC 3.0; the one the
// program's own exception handling and _Unwind_Backtrace use).
struct dwarf_eh_bases {
  void* tbase;
  void* dbase;
  void* func;
};
extern "C" const void* _Unwind_Find_FDE(const void* pc, dwarf_eh_bases* bases);

namespace {

constexpr unsigned kRbp = 6, kRsp = 7;

// What a frame's call frame information says, reduced to what a walk needs. Packed in 64 bits
// for the cache: kind, how the CFA and the caller's rbp are found, the return address's slot, and
// the offsets. Besides the ordinary frames (CFA at rsp or rbp plus an offset, registers saved at
// slots of the CFA), the frames GCC and NVCC make to realign the stack for wide vector locals:
// CFA = *(rbp + offset) (DW_OP_breg6; DW_OP_deref), rbp saved at rbp + offset (DW_OP_breg6).
enum Kind : uint64_t { kNormal = 1, kEndOfStack = 2, kUnsupported = 3 };
enum CfaMode : uint64_t { kCfaRsp = 0, kCfaRbp = 1, kCfaDerefRbp = 2 };
enum RbpMode : uint64_t { kRbpUnchanged = 0, kRbpAtCfa = 1, kRbpAtRbp = 2 };
struct Rule {
  Kind kind = kUnsupported;
  CfaMode cfa = kCfaRsp;
  RbpMode rbp = kRbpUnchanged;
  int8_t ra_slot = 0;   // return address at CFA + 8 * ra_slot
  int8_t rbp_slot = 0;  // saved rbp at CFA (kRbpAtCfa) or rbp (kRbpAtRbp) + 8 * rbp_slot
  int32_t cfa_offset = 0;
};

uint64_t pack(const Rule& r) {
  return static_cast<uint64_t>(r.kind) | (static_cast<uint64_t>(r.cfa) << 4) | (static_cast<uint64_t>(r.rbp) << 6) |
         (static_cast<uint64_t>(static_cast<uint8_t>(r.ra_slot)) << 8) |
         (static_cast<uint64_t>(static_cast<uint8_t>(r.rbp_slot)) << 16) |
         (static_cast<uint64_t>(static_cast<uint32_t>(r.cfa_offset)) << 32);
}

Rule unpack(uint64_t v) {
  Rule r;
  r.kind = static_cast<Kind>(v & 15);
  r.cfa = static_cast<CfaMode>((v >> 4) & 3);
  r.rbp = static_cast<RbpMode>((v >> 6) & 3);
  r.ra_slot = static_cast<int8_t>((v >> 8) & 0xff);
  r.rbp_slot = static_cast<int8_t>((v >> 16) & 0xff);
  r.cfa_offset = static_cast<int32_t>(static_cast<uint32_t>(v >> 32));
  return r;
}

// --- Reading .eh_frame --------------------------------------------------------------------------

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

bool parse_cie(const uint8_t* cie, Cie& out) {
  uint32_t length;
  memcpy(&length, cie, 4);
  if (length == 0 || length == 0xffffffffu) return false;  // 64-bit .eh_frame: not in practice
  Reader r{cie + 4, cie + 4 + length};
  if (r.fixed<uint32_t>() != 0) return false;  // not a CIE
  const uint8_t version = r.fixed<uint8_t>();
  const char* augmentation = reinterpret_cast<const char*>(r.p);
  const size_t aug_len = strnlen(augmentation, static_cast<size_t>(r.end - r.p));
  r.p += aug_len + 1;
  if (strstr(augmentation, "eh")) return false;
  out.code_align = r.uleb();
  out.data_align = r.sleb();
  out.ra_column = version == 1 ? r.fixed<uint8_t>() : r.uleb();
  if (augmentation[0] == 'z') {
    out.has_augmentation_data = true;
    const uint64_t data_len = r.uleb();
    const uint8_t* data_end = r.p + data_len;
    for (const char* a = augmentation + 1; *a && r.ok; ++a) {
      switch (*a) {
        case 'R':
          out.fde_encoding = r.fixed<uint8_t>();
          break;
        case 'P':
          r.skip_encoded(r.fixed<uint8_t>());
          break;
        case 'L':
          r.fixed<uint8_t>();
          break;
        case 'S':
          return false;  // a signal frame: registers come from the signal context
        default:
          return false;  // an augmentation we do not know
      }
    }
    r.p = data_end;
  } else if (augmentation[0] != '\0') {
    return false;
  }
  out.instructions = r.p;
  out.end = r.end;
  return r.ok && r.p <= r.end;
}

// The rule state of the CFA program as it runs.
struct RowState {
  unsigned cfa_register = kRsp;
  int64_t cfa_offset = 8;
  bool cfa_deref = false;  // CFA = *(cfa_register + cfa_offset)
  enum How : uint8_t { Unchanged, Saved, SavedAtRbp, Undefined, Bad } ra = Unchanged, rbp = Unchanged;
  int64_t ra_offset = 0, rbp_offset = 0;
  bool cfa_bad = false;
};

// A DWARF expression of the one shape realigned frames use: DW_OP_breg6 (rbp) N [; DW_OP_deref].
// Returns whether the block is exactly that, with `deref` saying whether it ends with the deref.
bool rbp_expression(const uint8_t* block, uint64_t length, int64_t& offset, bool& deref) {
  if (length < 2 || block[0] != 0x76) return false;  // DW_OP_breg6
  Reader e{block + 1, block + length};
  offset = e.sleb();
  deref = false;
  if (e.ok && e.p < e.end && *e.p == 0x06) {  // DW_OP_deref
    deref = true;
    ++e.p;
  }
  return e.ok && e.p == e.end;
}

// Runs CFA instructions while the location is at most `target`. Returns false on an instruction
// this walker does not follow.
bool run_cfa(Reader r, const Cie& cie, uint64_t location, uint64_t target, RowState& row, const RowState& initial) {
  RowState saved[8];
  int depth = 0;
  auto set_offset = [&](uint64_t reg, int64_t offset) {
    if (reg == cie.ra_column) row.ra = RowState::Saved, row.ra_offset = offset;
    if (reg == kRbp) row.rbp = RowState::Saved, row.rbp_offset = offset;
  };
  auto set_how = [&](uint64_t reg, RowState::How how) {
    if (reg == cie.ra_column) row.ra = how;
    if (reg == kRbp) row.rbp = how;
  };
  auto restore = [&](uint64_t reg) {
    if (reg == cie.ra_column) row.ra = initial.ra, row.ra_offset = initial.ra_offset;
    if (reg == kRbp) row.rbp = initial.rbp, row.rbp_offset = initial.rbp_offset;
  };
  auto advance = [&](uint64_t delta) {
    location += delta * cie.code_align;
    return location <= target;
  };
  while (r.p < r.end && r.ok) {
    const uint8_t op = r.fixed<uint8_t>();
    const uint8_t low = op & 0x3f;
    switch (op & 0xc0) {
      case 0x40:
        if (!advance(low)) return true;
        continue;
      case 0x80:
        set_offset(low, static_cast<int64_t>(r.uleb()) * cie.data_align);
        continue;
      case 0xc0:
        restore(low);
        continue;
      default:
        break;
    }
    switch (op) {
      case 0x00:
        break;  // nop
      case 0x02:
        if (!advance(r.fixed<uint8_t>())) return true;
        break;
      case 0x03:
        if (!advance(r.fixed<uint16_t>())) return true;
        break;
      case 0x04:
        if (!advance(r.fixed<uint32_t>())) return true;
        break;
      case 0x05: {  // offset_extended
        const uint64_t reg = r.uleb();
        set_offset(reg, static_cast<int64_t>(r.uleb()) * cie.data_align);
        break;
      }
      case 0x06:
        restore(r.uleb());
        break;
      case 0x07:
        set_how(r.uleb(), RowState::Undefined);
        break;
      case 0x08:
        set_how(r.uleb(), RowState::Unchanged);
        break;
      case 0x09: {  // register: a value moved to another register
        const uint64_t reg = r.uleb();
        r.uleb();
        set_how(reg, RowState::Bad);
        break;
      }
      case 0x0a:
        if (depth == 8) return false;
        saved[depth++] = row;
        break;
      case 0x0b:  // restore_state: the whole row, the CFA rule included (as libgcc does)
        if (depth == 0) return false;
        row = saved[--depth];
        break;
      case 0x0c:
        row.cfa_register = static_cast<unsigned>(r.uleb());
        row.cfa_offset = static_cast<int64_t>(r.uleb());
        row.cfa_deref = row.cfa_bad = false;
        break;
      case 0x0d:
        row.cfa_register = static_cast<unsigned>(r.uleb());
        row.cfa_deref = row.cfa_bad = false;
        break;
      case 0x0e:
        row.cfa_offset = static_cast<int64_t>(r.uleb());
        break;
      case 0x0f: {  // def_cfa_expression: realigned stacks keep the CFA at *(rbp + N)
        const uint64_t length = r.uleb();
        int64_t offset = 0;
        bool deref = false;
        if (r.p + length <= r.end && rbp_expression(r.p, length, offset, deref) && deref) {
          row.cfa_register = kRbp, row.cfa_offset = offset, row.cfa_deref = true, row.cfa_bad = false;
        } else {
          row.cfa_bad = true;
        }
        r.p += length;
        break;
      }
      case 0x10: {  // expression: realigned stacks save rbp at rbp + N
        const uint64_t reg = r.uleb();
        const uint64_t length = r.uleb();
        int64_t offset = 0;
        bool deref = false;
        if (reg == kRbp && r.p + length <= r.end && rbp_expression(r.p, length, offset, deref) && !deref) {
          row.rbp = RowState::SavedAtRbp, row.rbp_offset = offset;
        } else {
          set_how(reg, RowState::Bad);
        }
        r.p += length;
        break;
      }
      case 0x16: {  // val_expression
        const uint64_t reg = r.uleb();
        r.p += r.uleb();
        set_how(reg, RowState::Bad);
        break;
      }
      case 0x11: {  // offset_extended_sf
        const uint64_t reg = r.uleb();
        set_offset(reg, r.sleb() * cie.data_align);
        break;
      }
      case 0x12:
        row.cfa_register = static_cast<unsigned>(r.uleb());
        row.cfa_offset = r.sleb() * cie.data_align;
        row.cfa_deref = row.cfa_bad = false;
        break;
      case 0x13:
        row.cfa_offset = r.sleb() * cie.data_align;
        break;
      case 0x14:    // val_offset
      case 0x15: {  // val_offset_sf
        const uint64_t reg = r.uleb();
        if (op == 0x14) {
          r.uleb();
        } else {
          r.sleb();
        }
        set_how(reg, RowState::Bad);
        break;
      }
      case 0x2e:
        r.uleb();
        break;  // GNU_args_size
      default:
        return false;  // set_loc, GNU_negative_offset_extended, vendor ops
    }
  }
  return r.ok;
}

// The rule at `target` (an instruction address inside the function), from its FDE.
Rule compute_rule(uint64_t target) {
  Rule rule;
  dwarf_eh_bases bases{};
  const auto* fde = static_cast<const uint8_t*>(_Unwind_Find_FDE(reinterpret_cast<const void*>(target), &bases));
  // No unwind information: the end of the stack, or a signal trampoline that libgcc unwinds
  // through by recognizing its code; either way _Unwind_Backtrace knows better.
  if (!fde) return rule;
  uint32_t length;
  memcpy(&length, fde, 4);
  if (length == 0 || length == 0xffffffffu) return rule;
  int32_t cie_offset;
  memcpy(&cie_offset, fde + 4, 4);
  Cie cie;
  if (!parse_cie(fde + 4 - cie_offset, cie)) return rule;
  Reader r{fde + 8, fde + 4 + length};
  r.skip_encoded(cie.fde_encoding);         // pc_begin (libgcc decoded it: bases.func)
  r.skip_encoded(cie.fde_encoding & 0x0f);  // pc_range
  if (cie.has_augmentation_data) r.p += r.uleb();
  if (!r.ok || r.p > r.end) return rule;

  const uint64_t start = reinterpret_cast<uint64_t>(bases.func);
  RowState row;
  if (!run_cfa(Reader{cie.instructions, cie.end}, cie, start, UINT64_MAX, row, row)) return rule;
  const RowState initial = row;
  if (!run_cfa(r, cie, start, target, row, initial)) return rule;

  if (row.ra == RowState::Undefined) {
    rule.kind = kEndOfStack;
    return rule;
  }
  if (row.cfa_bad || (row.cfa_register != kRsp && row.cfa_register != kRbp) || row.ra != RowState::Saved ||
      row.rbp == RowState::Bad || row.rbp == RowState::Undefined)
    return rule;
  if (row.ra_offset % 8 || row.rbp_offset % 8 || row.ra_offset / 8 < -128 || row.ra_offset / 8 > 127 ||
      row.rbp_offset / 8 < -128 || row.rbp_offset / 8 > 127 || row.cfa_offset < INT32_MIN || row.cfa_offset > INT32_MAX)
    return rule;
  if (row.cfa_deref && row.cfa_register != kRbp) return rule;
  rule.kind = kNormal;
  rule.cfa = row.cfa_deref ? kCfaDerefRbp : row.cfa_register == kRbp ? kCfaRbp : kCfaRsp;
  rule.rbp = row.rbp == RowState::Saved ? kRbpAtCfa : row.rbp == RowState::SavedAtRbp ? kRbpAtRbp : kRbpUnchanged;
  rule.ra_slot = static_cast<int8_t>(row.ra_offset / 8);
  rule.rbp_slot = static_cast<int8_t>(row.rbp_offset / 8);
  rule.cfa_offset = static_cast<int32_t>(row.cfa_offset);
  return rule;
}

// --- The process-wide cache ---------------------------------------------------------------------
// Insert-only, lock-free: a slot's key goes 0 -> kBusy (claimed) -> address (published after its
// rule). A reader that meets kBusy computes the rule itself.
constexpr size_t kSlots = 1 << 14;
constexpr size_t kProbes = 16;
constexpr uint64_t kBusy = 1;
std::atomic<uint64_t> g_keys[kSlots];
std::atomic<uint64_t> g_rules[kSlots];
std::atomic<size_t> g_cached{0};

Rule rule_at(uint64_t target) {
  const size_t home = static_cast<size_t>((target * 0x9e3779b97f4a7c15ull) >> 50);
  for (size_t i = 0; i < kProbes; ++i) {
    const size_t slot = (home + i) & (kSlots - 1);
    const uint64_t key = g_keys[slot].load(std::memory_order_acquire);
    if (key == target) return unpack(g_rules[slot].load(std::memory_order_relaxed));
    if (key == 0) {
      const Rule rule = compute_rule(target);
      uint64_t expected = 0;
      if (g_keys[slot].compare_exchange_strong(expected, kBusy, std::memory_order_acq_rel)) {
        g_rules[slot].store(pack(rule), std::memory_order_relaxed);
        g_keys[slot].store(target, std::memory_order_release);
        g_cached.fetch_add(1, std::memory_order_relaxed);
      }
      return rule;
    }
  }
  return compute_rule(target);  // a crowded neighbourhood: correct, only slower
}

constexpr uint64_t kMaxFrameBytes = uint64_t{64} << 20;

}  // namespace

__attribute__((noinline)) int cfi_backtrace(uint64_t* frames, size_t max) noexcept {
  uint64_t ip, sp, bp;
  asm volatile("lea 0(%%rip), %0\n\tmov %%rsp, %1\n\tmov %%rbp, %2" : "=r"(ip), "=r"(sp), "=r"(bp));
  uint64_t target = ip;  // this frame: the rule at this very instruction
  int skip = 1;          // the return address into our caller is not reported
  int n = 0;
  for (int depth = 0; depth < 512; ++depth) {
    const Rule rule = rule_at(target);
    if (rule.kind == kEndOfStack) return n;
    if (rule.kind != kNormal) return -1;
    // Every address read is on this thread's stack above the frame being left: a rule that would
    // take the walk backwards or far away is not one to follow.
    auto on_stack = [sp](uint64_t a) { return a >= sp && a - sp < kMaxFrameBytes && !(a & 7); };
    uint64_t cfa = (rule.cfa == kCfaRsp ? sp : bp) + static_cast<int64_t>(rule.cfa_offset);
    if (rule.cfa == kCfaDerefRbp) {
      if (!on_stack(cfa)) return -1;
      memcpy(&cfa, reinterpret_cast<const void*>(cfa), sizeof cfa);
    }
    if (cfa <= sp || !on_stack(cfa)) return -1;
    uint64_t ra;
    memcpy(&ra, reinterpret_cast<const void*>(cfa + 8 * rule.ra_slot), sizeof ra);
    if (rule.rbp != kRbpUnchanged) {
      const uint64_t saved = (rule.rbp == kRbpAtCfa ? cfa : bp) + 8 * static_cast<int64_t>(rule.rbp_slot);
      if (!on_stack(saved)) return -1;
      memcpy(&bp, reinterpret_cast<const void*>(saved), sizeof bp);
    }
    sp = cfa;
    if (ra == 0) return n;
    if (skip) {
      --skip;
    } else {
      frames[n++] = ra;
      if (static_cast<size_t>(n) == max) return n;
    }
    target = ra - 1;  // the call instruction: the rule in effect while the callee ran
  }
  return n;
}

size_t cfi_cached_rules() noexcept { return g_cached.load(std::memory_order_relaxed); }

#else

int cfi_backtrace(uint64_t*, size_t) noexcept { return -1; }
size_t cfi_cached_rules() noexcept { return 0; }

#endif

}  // namespace cuaudit::inject
