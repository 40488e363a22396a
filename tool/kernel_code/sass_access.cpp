#include "sass_access.h"

#include <algorithm>
#include <optional>
#include <set>
#include <stdexcept>

#include <nlohmann/json.hpp>

namespace cuaudit {
namespace {

constexpr uint32_t kUnbounded = 1u << 30;   // an added offset known to be zero
constexpr uint64_t kInstructionBytes = 16;  // every SASS instruction since Volta

// The largest power of two dividing `v` (kUnbounded for 0).
uint32_t power_of_two_of(uint64_t v) {
  if (v == 0) return kUnbounded;
  return static_cast<uint32_t>(std::min<uint64_t>(v & (~v + 1), kUnbounded));
}

std::vector<std::string> split_operands(const std::string& operands) {
  std::vector<std::string> out;
  std::string current;
  int depth = 0;
  for (char c : operands) {
    if (c == '[') ++depth;
    if (c == ']') --depth;
    if (c == ',' && depth == 0) {
      out.push_back(current);
      current.clear();
    } else if (c != ' ') {
      current += c;
    }
  }
  if (!current.empty()) out.push_back(current);
  return out;
}

// "R4.reuse" -> "R4"; "-R3", "|R3|" -> "R3". Empty for what is not a register.
std::string register_of(std::string op) {
  while (!op.empty() && (op.front() == '-' || op.front() == '!' || op.front() == '|' || op.front() == '~'))
    op.erase(op.begin());
  if (const auto dot = op.find('.'); dot != std::string::npos) op.resize(dot);
  if (!op.empty() && op.back() == '|') op.pop_back();
  const bool uniform = op.rfind("UR", 0) == 0;
  const size_t digits = uniform ? 2 : 1;
  if (op.size() <= digits || (op[0] != 'R' && !uniform)) return {};
  if (!std::all_of(op.begin() + static_cast<std::ptrdiff_t>(digits), op.end(), ::isdigit)) return {};
  return op;
}

std::optional<uint64_t> immediate_of(const std::string& op) {
  if (op.rfind("0x", 0) != 0) return std::nullopt;
  try {
    return std::stoull(op, nullptr, 16);
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

// c[0x0][0x210] -> 0x210 (bank 0 only).
std::optional<uint64_t> bank0_offset(const std::string& op) {
  if (op.rfind("c[0x0][", 0) != 0 || op.back() != ']') return std::nullopt;
  return immediate_of(op.substr(7, op.size() - 8));
}

// The access width of a load or store opcode: LDG.E.128 -> 16.
uint32_t access_width(const std::string& opcode) {
  if (opcode.find(".128") != std::string::npos) return 16;
  if (opcode.find(".64") != std::string::npos) return 8;
  if (opcode.find(".U16") != std::string::npos || opcode.find(".S16") != std::string::npos) return 2;
  if (opcode.find(".U8") != std::string::npos || opcode.find(".S8") != std::string::npos) return 1;
  return 4;
}

bool is_global_access(const std::string& opcode) {
  for (const char* prefix : {"LDG", "STG", "ATOMG", "RED", "LD.", "ST."}) {
    if (opcode.rfind(prefix, 0) == 0) return true;
  }
  return opcode == "LD" || opcode == "ST";
}

// A register holding a parameter (its 64-bit value, or its low 32 bits) plus an offset whose
// alignment is known.
struct Derived {
  uint32_t param = 0;             // offset from the first parameter
  uint32_t offset_alignment = 0;  // what divides the offset added so far (kUnbounded: none added)
  bool low_word_only = false;     // a 32-bit load of the parameter: good for tests of its low bits only
};

class FunctionAnalysis {
 public:
  FunctionAnalysis(uint32_t param_base, KernelAccess& out) : base_(param_base), out_(out) {}

  void run(const nlohmann::json& instructions) {
    std::set<uint64_t> targets;
    for (const auto& ins : instructions) {
      const std::string opcode = ins.value("opcode", "");
      if (opcode == "BRA" || opcode == "BRX" || opcode == "BSSY" || opcode == "CALL.REL") {
        for (const std::string& op : split_operands(ins.value("operands", ""))) {
          if (auto target = immediate_of(op)) targets.insert(*target);
        }
      }
    }
    // Registers written once in the whole function hold the same value wherever they are read
    // after it (compilers read no register a path has not written): loop invariants survive a
    // loop's head. Any other register is forgotten at a branch target.
    std::map<std::string, int> writes;
    for (const auto& ins : instructions) {
      const std::string opcode = ins.value("opcode", "");
      const auto ops = split_operands(ins.value("operands", ""));
      if (ops.empty() || opcode.rfind("ST", 0) == 0 || opcode.rfind("RED", 0) == 0) continue;  // no register result
      for (size_t i = 0; i < std::min<size_t>(ops.size(), 2); ++i) {
        if (const std::string r = register_of(ops[i]); !r.empty()) ++writes[r];
        if (i == 0 && !register_of(ops[0]).empty()) break;  // only LOP3's predicate form writes its second operand
      }
    }
    uint64_t address = 0;
    for (const auto& ins : instructions) {
      if (targets.count(address)) {  // reached from elsewhere: only what cannot have changed is followed
        for (auto it = regs_.begin(); it != regs_.end();) it = writes[it->first] == 1 ? std::next(it) : regs_.erase(it);
      }
      step(ins.value("opcode", ""), split_operands(ins.value("operands", "")), ins.contains("predicate"));
      address += kInstructionBytes;
    }
  }

 private:
  const Derived* derived(const std::string& op) const {
    auto it = regs_.find(register_of(op));
    return it == regs_.end() ? nullptr : &it->second;
  }

  // `dest` = `base` plus something whose alignment is `added`.
  void add(const std::string& dest, const Derived& base, uint32_t added) {
    Derived d = base;
    d.offset_alignment = std::min(d.offset_alignment, added);
    if (d.low_word_only) return kill(dest);
    assign(dest, d);
  }

  void kill(const std::string& dest) { forget(register_of(dest)); }

  // A register is written: what it held is gone, and so is the 64-bit value of the pair it is the
  // high half of (R3 of R2:R3).
  void forget(const std::string& reg) {
    regs_.erase(reg);
    const bool uniform = reg.rfind("UR", 0) == 0;
    if (reg.empty() || reg == "RZ" || reg == "URZ") return;
    const int n = std::stoi(reg.substr(uniform ? 2 : 1));
    if (n % 2 == 0) return;
    auto low = regs_.find((uniform ? "UR" : "R") + std::to_string(n - 1));
    if (low != regs_.end() && !low->second.low_word_only) regs_.erase(low);
  }

  void assign(const std::string& dest, const Derived& d) {
    const std::string reg = register_of(dest);
    forget(reg);
    regs_[reg] = d;
  }

  static uint32_t added_alignment(const std::string& op) {
    if (register_of(op) == "RZ" || op == "RZ" || op == "URZ") return kUnbounded;
    if (auto imm = immediate_of(op)) return power_of_two_of(*imm);
    return 1;  // a register: any value
  }

  void step(const std::string& opcode, const std::vector<std::string>& ops, bool predicated) {
    if (ops.empty()) return;
    const std::string& dest = ops[0];
    if (is_global_access(opcode)) {
      access(opcode, ops);
      const bool stores = opcode.rfind("ST", 0) == 0 || opcode.rfind("RED", 0) == 0;
      if (!stores && register_of(dest) != "") kill(dest);  // a load's (or an atomic's) result
      return;
    }
    if (opcode.rfind("LOP3", 0) == 0) return test_of_low_bits(ops);
    if (predicated) return kill(dest);  // may not run: what the register holds is not known
    if (opcode.rfind("LDC", 0) == 0 || opcode.rfind("ULDC", 0) == 0) {
      const auto offset = ops.size() > 1 ? bank0_offset(ops[1]) : std::nullopt;
      if (!offset || *offset < base_) return kill(dest);
      return assign(dest,
                    {static_cast<uint32_t>(*offset - base_), kUnbounded, opcode.find(".64") == std::string::npos});
    }
    if ((opcode == "MOV" || opcode == "UMOV") && ops.size() > 1) {
      if (const Derived* d = derived(ops[1])) return assign(dest, Derived(*d));
      return kill(dest);
    }
    if (opcode.rfind("IMAD.WIDE", 0) == 0 && ops.size() > 3) {  // dest = a * b + c
      if (const Derived* c = derived(ops[3])) {
        const auto a = immediate_of(ops[1]), b = immediate_of(ops[2]);
        const uint32_t scale = b ? power_of_two_of(*b) : a ? power_of_two_of(*a) : 1;
        return add(dest, *c, scale);
      }
      return kill(dest);
    }
    if ((opcode.rfind("IADD3", 0) == 0 && opcode.find(".X") == std::string::npos) || opcode == "VIADD" ||
        opcode == "IADD") {  // dest = sum of the sources: one of them the parameter
      const Derived* base = nullptr;
      uint32_t added = kUnbounded;
      for (size_t i = 1; i < ops.size(); ++i) {
        if (const Derived* d = derived(ops[i]); d && !base) {
          base = d;
        } else {
          added = std::min(added, added_alignment(ops[i]));
        }
      }
      if (base) return add(dest, *base, added);
      return kill(dest);
    }
    if (opcode == "LEA" && ops.size() > 3) {  // dest = (a << shift) + b
      if (const Derived* b = derived(ops[2])) {
        const auto shift = immediate_of(ops[3]);
        return add(dest, *b, shift && *shift < 30 ? 1u << *shift : 1);
      }
      return kill(dest);
    }
    kill(dest);
  }

  // A global load or store: its address operand is the one in brackets, [R4.64+0x8].
  void access(const std::string& opcode, const std::vector<std::string>& ops) {
    for (const std::string& op : ops) {
      const auto open = op.rfind('[');
      if (open == std::string::npos || op.back() != ']') continue;
      std::string inner = op.substr(open + 1, op.size() - open - 2);
      uint64_t immediate = 0;
      if (const auto plus = inner.find('+'); plus != std::string::npos) {
        immediate = immediate_of(inner.substr(plus + 1)).value_or(1);
        inner.resize(plus);
      }
      const Derived* d = derived(inner);
      if (!d || d->low_word_only) continue;
      const uint32_t width = access_width(opcode);
      const uint32_t offset_alignment = std::min(d->offset_alignment, power_of_two_of(immediate));
      if (offset_alignment < width) continue;  // the address's alignment depends on more than the parameter
      ParamAccess& p = out_.params[d->param];
      p.width = std::max(p.width, width);
    }
  }

  // LOP3.LUT P0, RZ, R2, 0xf, R3, 0xc8, !PT: the kernel looks at the low bits of the parameters it
  // masks with a small constant. The three sources stand before the lookup table, the last
  // immediate operand.
  void test_of_low_bits(const std::vector<std::string>& ops) {
    size_t lut = ops.size();
    for (size_t i = ops.size(); i-- > 0;) {
      if (immediate_of(ops[i])) {
        lut = i;
        break;
      }
    }
    if (lut < 4 || lut == ops.size()) return kill(ops[0]);
    bool small_mask = false;
    for (size_t i = lut - 3; i < lut; ++i) {
      if (auto imm = immediate_of(ops[i]); imm && *imm > 0 && *imm < 0x100) small_mask = true;
    }
    if (small_mask) {
      for (size_t i = lut - 3; i < lut; ++i) {
        if (const Derived* d = derived(ops[i])) out_.params[d->param].guarded = true;
      }
    }
    kill(ops[0]);
    if (lut == 5) kill(ops[1]);  // the form that also writes a predicate: its register result
  }

  uint32_t base_;
  KernelAccess& out_;
  std::map<std::string, Derived> regs_;
};

}  // namespace

std::vector<KernelAccess> analyze_sass_json(std::string_view json_text, uint32_t param_base) {
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(json_text);
  } catch (const nlohmann::json::exception& e) {
    throw std::runtime_error(std::string("not nvdisasm's JSON: ") + e.what());
  }
  // [header, [function, ...]]
  if (!doc.is_array() || doc.size() < 2 || !doc[1].is_array()) {
    throw std::runtime_error("not nvdisasm's JSON: expected [header, functions]");
  }
  std::vector<KernelAccess> kernels;
  for (const auto& function : doc[1]) {
    KernelAccess k;
    k.name = function.value("function-name", "");
    if (function.contains("sass-instructions")) FunctionAnalysis(param_base, k).run(function["sass-instructions"]);
    kernels.push_back(std::move(k));
  }
  return kernels;
}

}  // namespace cuaudit
