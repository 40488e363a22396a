#include "result_use.h"

#include "cache_file.h"
#include "safe_file.h"

#include <sys/stat.h>

#include <capstone/capstone.h>
#include <elf.h>

#include <algorithm>
#include <fstream>
#include <set>

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "elf_file.h"

namespace cuaudit {
namespace {

bool is_result_register(unsigned reg) {
  return reg == X86_REG_RAX || reg == X86_REG_EAX || reg == X86_REG_AX || reg == X86_REG_AL || reg == X86_REG_AH;
}

// `xor eax, eax` and friends read nothing: they only zero.
bool is_zeroing_idiom(const cs_insn& insn) {
  const cs_x86& x = insn.detail->x86;
  if (insn.id != X86_INS_XOR && insn.id != X86_INS_SUB && insn.id != X86_INS_PXOR && insn.id != X86_INS_XORPS)
    return false;
  return x.op_count == 2 && x.operands[0].type == X86_OP_REG && x.operands[1].type == X86_OP_REG &&
         x.operands[0].reg == x.operands[1].reg;
}

struct Disassembler {
  csh handle = 0;
  bool ok = false;
  Disassembler() {
    ok = cs_open(CS_ARCH_X86, CS_MODE_64, &handle) == CS_ERR_OK &&
         cs_option(handle, CS_OPT_DETAIL, CS_OPT_ON) == CS_ERR_OK;
  }
  ~Disassembler() {
    if (handle) cs_close(&handle);
  }
};

constexpr size_t kInstructionBudget = 2048;

}  // namespace

const char* result_use_name(ResultUse r) {
  switch (r) {
    case ResultUse::Used:
      return "used";
    case ResultUse::Discarded:
      return "discarded";
    case ResultUse::Returned:
      return "returned";
    case ResultUse::Unknown:
      return "unknown";
  }
  return "unknown";
}

ResultUse analyze_result_use(const uint8_t* code, size_t size, uint64_t base, uint64_t start) {
  static thread_local Disassembler d;
  if (!d.ok) return ResultUse::Unknown;
  cs_insn* insn = cs_malloc(d.handle);
  bool returned = false, unknown = false;
  std::vector<uint64_t> work{start};
  std::set<uint64_t> visited;
  size_t budget = kInstructionBudget;
  ResultUse verdict = ResultUse::Discarded;

  while (!work.empty() && verdict != ResultUse::Used) {
    uint64_t address = work.back();
    work.pop_back();
    for (;;) {                                     // one straight path
      if (!visited.insert(address).second) break;  // joins a path already followed
      if (budget-- == 0 || address < base || address >= base + size) {
        unknown = true;
        break;
      }
      const uint8_t* p = code + (address - base);
      size_t left = size - (address - base);
      uint64_t at = address;
      if (!cs_disasm_iter(d.handle, &p, &left, &at, insn)) {
        unknown = true;
        break;
      }
      cs_regs read, written;
      uint8_t read_count = 0, written_count = 0;
      if (cs_regs_access(d.handle, insn, read, &read_count, written, &written_count) != CS_ERR_OK) {
        unknown = true;
        break;
      }
      const bool zeroing = is_zeroing_idiom(*insn);
      if (!zeroing && std::any_of(read, read + read_count, is_result_register)) {
        verdict = ResultUse::Used;
        break;
      }
      bool overwritten = false, partial = false;
      for (uint8_t i = 0; i < written_count; ++i) {
        if (written[i] == X86_REG_EAX || written[i] == X86_REG_RAX) overwritten = true;
        if (written[i] == X86_REG_AX || written[i] == X86_REG_AL || written[i] == X86_REG_AH) partial = true;
      }
      if (overwritten) break;  // this path discards it
      if (partial) {
        unknown = true;
        break;
      }
      if (cs_insn_group(d.handle, insn, CS_GRP_RET)) {
        returned = true;
        break;
      }
      if (cs_insn_group(d.handle, insn, CS_GRP_CALL)) break;  // the callee clobbers eax
      if (cs_insn_group(d.handle, insn, CS_GRP_INT) || insn->id == X86_INS_UD2 || insn->id == X86_INS_HLT) break;
      if (cs_insn_group(d.handle, insn, CS_GRP_JUMP)) {
        const cs_x86& x = insn->detail->x86;
        if (x.op_count != 1 || x.operands[0].type != X86_OP_IMM) {
          unknown = true;  // through a register or memory: cannot follow
          break;
        }
        const uint64_t target = static_cast<uint64_t>(x.operands[0].imm);
        if (insn->id == X86_INS_JMP) {
          address = target;
          continue;
        }
        work.push_back(target);  // conditional: both ways
      }
      address = insn->address + insn->size;
    }
  }
  cs_free(insn, 1);
  if (verdict == ResultUse::Used) return verdict;
  if (unknown) return ResultUse::Unknown;
  return returned ? ResultUse::Returned : ResultUse::Discarded;
}

struct CallSiteJudge::ModuleCode {
  struct Segment {
    uint64_t vaddr;
    std::vector<uint8_t> bytes;
  };
  std::vector<Segment> segments;  // executable PT_LOAD segments

  static std::unique_ptr<ModuleCode> load(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    Elf64_Ehdr eh;
    if (!in.read(reinterpret_cast<char*>(&eh), sizeof eh) || eh.e_ident[EI_CLASS] != ELFCLASS64 ||
        eh.e_machine != EM_X86_64 || eh.e_phentsize != sizeof(Elf64_Phdr)) {
      return nullptr;  // not x86-64: the machine code cannot be decided
    }
    auto code = std::make_unique<ModuleCode>();
    for (int i = 0; i < eh.e_phnum; ++i) {
      Elf64_Phdr ph;
      in.seekg(static_cast<std::streamoff>(eh.e_phoff + i * sizeof ph));
      if (!in.read(reinterpret_cast<char*>(&ph), sizeof ph)) return nullptr;
      if (ph.p_type != PT_LOAD || !(ph.p_flags & PF_X) || ph.p_filesz > (1ull << 31)) continue;
      Segment s{ph.p_vaddr, std::vector<uint8_t>(ph.p_filesz)};
      const auto here = in.tellg();
      in.seekg(static_cast<std::streamoff>(ph.p_offset));
      if (!in.read(reinterpret_cast<char*>(s.bytes.data()), static_cast<std::streamsize>(s.bytes.size())))
        return nullptr;
      in.seekg(here);
      code->segments.push_back(std::move(s));
    }
    return code;
  }
};

CallSiteJudge::CallSiteJudge() = default;
CallSiteJudge::~CallSiteJudge() = default;

const CallSiteJudge::ModuleCode* CallSiteJudge::code_of(const ModuleInfo& module) {
  auto& slot = code_[module.path];
  if (!slot && module_file_problem(module).empty()) slot = ModuleCode::load(module.path);
  return slot.get();
}

ResultUse CallSiteJudge::at(const RawFrame& frame) {
  if (!frame.module) return ResultUse::Unknown;
  const uint64_t vaddr = frame.address - frame.module->load_bias;
  auto& by_offset = cache_[module_cache_key(*frame.module)];
  if (auto it = by_offset.find(vaddr); it != by_offset.end()) return it->second;
  ResultUse verdict = ResultUse::Unknown;
  if (const ModuleCode* code = code_of(*frame.module)) {
    for (const auto& s : code->segments) {
      if (vaddr >= s.vaddr && vaddr < s.vaddr + s.bytes.size()) {
        verdict = analyze_result_use(s.bytes.data(), s.bytes.size(), s.vaddr, vaddr);
        break;
      }
    }
    by_offset[vaddr] = verdict;  // only cache what was decided from the real file
  }
  return verdict;
}

ResultUse CallSiteJudge::for_call(const std::vector<RawFrame>& frames) {
  for (const RawFrame& f : frames) {
    const ResultUse v = at(f);
    if (v != ResultUse::Returned) return v;
  }
  return ResultUse::Unknown;  // returned out of every recorded frame
}

bool CallSiteJudge::load_cache(const std::string& path, std::string& error) {
  std::optional<nlohmann::json> document;
  if (!read_cache_document(path, "cuaudit.call_sites.v1", "call-site cache", document, error)) return false;
  if (!document) return true;
  const nlohmann::json& doc = *document;
  try {
    for (const auto& [key, offsets] : doc.at("modules").items()) {
      for (const auto& [offset, verdict] : offsets.items()) {
        const std::string v = verdict;
        const ResultUse r = v == "used"        ? ResultUse::Used
                            : v == "discarded" ? ResultUse::Discarded
                            : v == "returned"  ? ResultUse::Returned
                                               : ResultUse::Unknown;
        cache_[key][std::stoull(offset, nullptr, 16)] = r;
      }
    }
  } catch (const std::exception& e) {
    error = unreadable_cache(path, "call-site cache", e);
    return false;
  }
  return true;
}

bool CallSiteJudge::save_cache(const std::string& path, std::string& error) const {
  nlohmann::json modules = nlohmann::json::object();
  for (const auto& [key, offsets] : cache_) {
    nlohmann::json entries = nlohmann::json::object();
    for (const auto& [offset, verdict] : offsets) entries[fmt::format("{:x}", offset)] = result_use_name(verdict);
    if (!entries.empty()) modules[key] = std::move(entries);
  }
  const std::string text = nlohmann::json{{"schema", "cuaudit.call_sites.v1"}, {"modules", modules}}.dump(
                               1, ' ', false, nlohmann::json::error_handler_t::replace) +
                           "\n";
  return replace_file(path, text, error);
}

}  // namespace cuaudit
