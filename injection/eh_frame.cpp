#include "eh_frame.h"

namespace cuaudit::inject {

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

namespace {

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

// One run of a CFA program: the row it changes and the states remember_state saved.
class CfaRun {
 public:
  enum Step { Next, Reached, Unsupported };

  CfaRun(Reader& r, const Cie& cie, uint64_t location, uint64_t target, RowState& row, const RowState& initial)
      : r_(r), cie_(cie), location_(location), target_(target), row_(row), initial_(initial) {}

  Step step(uint8_t op) {
    const uint8_t low = op & 0x3f;
    switch (op & 0xc0) {  // the primary opcodes carry their operand in the low 6 bits
      case 0x40:
        return advance(low);
      case 0x80:
        set_offset(low, static_cast<int64_t>(r_.uleb()) * cie_.data_align);
        return Next;
      case 0xc0:
        restore(low);
        return Next;
      default:
        break;
    }
    switch (op) {
      case 0x00:  // nop
        return Next;
      case 0x02:
        return advance(r_.fixed<uint8_t>());
      case 0x03:
        return advance(r_.fixed<uint16_t>());
      case 0x04:
        return advance(r_.fixed<uint32_t>());
      case 0x0a:  // remember_state
        if (depth_ == 8) return Unsupported;
        saved_[depth_++] = row_;
        return Next;
      case 0x0b:  // restore_state: the whole row, the CFA rule included (as libgcc does)
        if (depth_ == 0) return Unsupported;
        row_ = saved_[--depth_];
        return Next;
      case 0x2e:  // GNU_args_size
        r_.uleb();
        return Next;
      default:
        return cfa_rule(op) || register_rule(op) ? Next : Unsupported;
    }
  }

 private:
  Step advance(uint64_t delta) {
    location_ += delta * cie_.code_align;
    return location_ <= target_ ? Next : Reached;
  }
  void set_offset(uint64_t reg, int64_t offset) {
    if (reg == cie_.ra_column) row_.ra = RowState::Saved, row_.ra_offset = offset;
    if (reg == kRbp) row_.rbp = RowState::Saved, row_.rbp_offset = offset;
  }
  void set_how(uint64_t reg, RowState::How how) {
    if (reg == cie_.ra_column) row_.ra = how;
    if (reg == kRbp) row_.rbp = how;
  }
  void restore(uint64_t reg) {
    if (reg == cie_.ra_column) row_.ra = initial_.ra, row_.ra_offset = initial_.ra_offset;
    if (reg == kRbp) row_.rbp = initial_.rbp, row_.rbp_offset = initial_.rbp_offset;
  }

  // DW_CFA_def_cfa*: how the CFA is found. False for another opcode.
  bool cfa_rule(uint8_t op) {
    switch (op) {
      case 0x0c:
        row_.cfa_register = static_cast<unsigned>(r_.uleb());
        row_.cfa_offset = static_cast<int64_t>(r_.uleb());
        row_.cfa_deref = row_.cfa_bad = false;
        return true;
      case 0x0d:
        row_.cfa_register = static_cast<unsigned>(r_.uleb());
        row_.cfa_deref = row_.cfa_bad = false;
        return true;
      case 0x0e:
        row_.cfa_offset = static_cast<int64_t>(r_.uleb());
        return true;
      case 0x0f: {  // def_cfa_expression: realigned stacks keep the CFA at *(rbp + N)
        const uint64_t length = r_.uleb();
        int64_t offset = 0;
        bool deref = false;
        if (r_.p + length <= r_.end && rbp_expression(r_.p, length, offset, deref) && deref) {
          row_.cfa_register = kRbp, row_.cfa_offset = offset, row_.cfa_deref = true, row_.cfa_bad = false;
        } else {
          row_.cfa_bad = true;
        }
        r_.p += length;
        return true;
      }
      case 0x12:
        row_.cfa_register = static_cast<unsigned>(r_.uleb());
        row_.cfa_offset = r_.sleb() * cie_.data_align;
        row_.cfa_deref = row_.cfa_bad = false;
        return true;
      case 0x13:
        row_.cfa_offset = r_.sleb() * cie_.data_align;
        return true;
      default:
        return false;
    }
  }

  // Where a register was saved (only rbp and the return address matter). False for another opcode
  // (set_loc, GNU_negative_offset_extended, vendor ops: not followed).
  bool register_rule(uint8_t op) {
    switch (op) {
      case 0x05: {  // offset_extended
        const uint64_t reg = r_.uleb();
        set_offset(reg, static_cast<int64_t>(r_.uleb()) * cie_.data_align);
        return true;
      }
      case 0x06:
        restore(r_.uleb());
        return true;
      case 0x07:
        set_how(r_.uleb(), RowState::Undefined);
        return true;
      case 0x08:
        set_how(r_.uleb(), RowState::Unchanged);
        return true;
      case 0x09: {  // register: a value moved to another register
        const uint64_t reg = r_.uleb();
        r_.uleb();
        set_how(reg, RowState::Bad);
        return true;
      }
      case 0x10: {  // expression: realigned stacks save rbp at rbp + N
        const uint64_t reg = r_.uleb();
        const uint64_t length = r_.uleb();
        int64_t offset = 0;
        bool deref = false;
        if (reg == kRbp && r_.p + length <= r_.end && rbp_expression(r_.p, length, offset, deref) && !deref) {
          row_.rbp = RowState::SavedAtRbp, row_.rbp_offset = offset;
        } else {
          set_how(reg, RowState::Bad);
        }
        r_.p += length;
        return true;
      }
      case 0x11: {  // offset_extended_sf
        const uint64_t reg = r_.uleb();
        set_offset(reg, r_.sleb() * cie_.data_align);
        return true;
      }
      case 0x14:    // val_offset
      case 0x15: {  // val_offset_sf
        const uint64_t reg = r_.uleb();
        if (op == 0x14) {
          r_.uleb();
        } else {
          r_.sleb();
        }
        set_how(reg, RowState::Bad);
        return true;
      }
      case 0x16: {  // val_expression
        const uint64_t reg = r_.uleb();
        r_.p += r_.uleb();
        set_how(reg, RowState::Bad);
        return true;
      }
      default:
        return false;
    }
  }

  Reader& r_;
  const Cie& cie_;
  uint64_t location_;
  const uint64_t target_;
  RowState& row_;
  const RowState& initial_;
  RowState saved_[8];
  int depth_ = 0;
};

}  // namespace

bool run_cfa(Reader r, const Cie& cie, uint64_t location, uint64_t target, RowState& row, const RowState& initial) {
  CfaRun run(r, cie, location, target, row, initial);
  while (r.p < r.end && r.ok) {
    switch (run.step(r.fixed<uint8_t>())) {
      case CfaRun::Next:
        break;
      case CfaRun::Reached:
        return true;
      case CfaRun::Unsupported:
        return false;
    }
  }
  return r.ok;
}

}  // namespace cuaudit::inject
