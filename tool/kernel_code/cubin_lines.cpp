#include "cubin_lines.h"

#include <dwarf.h>

#include <algorithm>

#include "elf_image.h"

namespace cuaudit {
namespace {

// A cursor over the line table's bytes; reading past the end sets `bad` and gives 0.
struct Reader {
  std::string_view bytes;
  size_t at = 0;
  bool bad = false;

  template <typename T>
  T fixed() {
    T v{};
    if (!read_at(bytes, at, v)) bad = true;
    at += sizeof(T);
    return v;
  }
  uint64_t uleb() {
    uint64_t v = 0;
    for (unsigned shift = 0;; shift += 7) {
      if (at >= bytes.size()) return bad = true, 0;
      const auto b = static_cast<uint8_t>(bytes[at++]);
      if (shift < 64) v |= uint64_t(b & 0x7f) << shift;
      if (!(b & 0x80)) return v;
    }
  }
  int64_t sleb() {  // built unsigned: no signed overflow on hostile input
    uint64_t v = 0;
    unsigned shift = 0;
    uint8_t b = 0;
    do {
      if (at >= bytes.size()) return bad = true, 0;
      b = static_cast<uint8_t>(bytes[at++]);
      if (shift < 64) v |= uint64_t(b & 0x7f) << shift;
      shift += 7;
    } while (b & 0x80);
    if (shift < 64 && (b & 0x40)) v |= ~uint64_t{0} << shift;
    return static_cast<int64_t>(v);
  }
  std::string_view text() {
    const std::string_view s = c_string(bytes, at);
    at += s.size() + 1;
    if (at > bytes.size()) bad = true;
    return s;
  }
};

// Which section each relocated 8-byte place of .debug_line points into (its offset -> section
// index), from the relocation sections that apply to it.
std::map<uint64_t, uint32_t> relocated_sections(std::string_view image, const ElfSections& elf, size_t debug_line) {
  std::map<uint64_t, uint32_t> out;
  for (const Elf64_Shdr& s : elf.headers) {
    if ((s.sh_type != SHT_RELA && s.sh_type != SHT_REL) || s.sh_info != debug_line || s.sh_link >= elf.headers.size())
      continue;
    const std::string_view relocs = section_bytes(image, s), symbols = section_bytes(image, elf.headers[s.sh_link]);
    const size_t size = s.sh_type == SHT_RELA ? sizeof(Elf64_Rela) : sizeof(Elf64_Rel);
    for (size_t i = 0; i + size <= relocs.size(); i += size) {
      Elf64_Rela r{};
      memcpy(&r, relocs.data() + i, size);
      Elf64_Sym symbol;
      if (!read_at(symbols, ELF64_R_SYM(r.r_info) * sizeof(Elf64_Sym), symbol)) continue;
      out[r.r_offset] = symbol.st_shndx;
    }
  }
  return out;
}

// One unit of the line table: its rows, each sequence's filed under the kernel whose section its
// DW_LNE_set_address is relocated against. Returns false on a unit this reader does not know.
bool read_unit(Reader& r, const ElfSections& elf, const std::map<uint64_t, uint32_t>& relocated,
               std::map<std::string, std::vector<LineRow>>& out) {
  const uint32_t length = r.fixed<uint32_t>();
  if (length == 0xffffffff || r.bad) return false;  // 64-bit DWARF: not what nvcc writes
  const size_t end = r.at + length;
  const uint16_t version = r.fixed<uint16_t>();
  if (version < 2 || version > 4 || end > r.bytes.size()) return false;
  const uint32_t header_length = r.fixed<uint32_t>();
  const size_t program = r.at + header_length;
  const uint8_t min_instruction = r.fixed<uint8_t>();
  if (version >= 4) r.fixed<uint8_t>();  // maximum operations per instruction: 1 outside VLIW
  r.fixed<uint8_t>();                    // default_is_stmt
  const auto line_base = static_cast<int8_t>(r.fixed<uint8_t>());
  const uint8_t line_range = r.fixed<uint8_t>(), opcode_base = r.fixed<uint8_t>();
  if (line_range == 0 || opcode_base == 0) return false;
  std::vector<uint8_t> operands(opcode_base);
  for (size_t i = 1; i < opcode_base; ++i) operands[i] = r.fixed<uint8_t>();
  std::vector<std::string_view> directories{""};
  for (std::string_view d = r.text(); !d.empty() && !r.bad; d = r.text()) directories.push_back(d);
  std::vector<std::string> files{""};
  for (std::string_view f = r.text(); !f.empty() && !r.bad; f = r.text()) {
    const uint64_t directory = r.uleb();
    r.uleb(), r.uleb();  // modification time, length
    files.push_back(directory && directory < directories.size()
                        ? std::string(directories[directory]) + "/" + std::string(f)
                        : std::string(f));
  }
  if (r.bad || program > end) return false;
  r.at = program;
  uint64_t address = 0, file = 1;
  uint64_t line = 1;  // unsigned: wraps, as two's complement would, on hostile input
  std::vector<LineRow> rows;
  std::string kernel;
  auto emit = [&](bool end_sequence) {
    rows.push_back(
        {address, file < files.size() ? files[file] : std::string(), static_cast<uint32_t>(line), end_sequence});
  };
  while (r.at < end && !r.bad) {
    const uint8_t op = r.fixed<uint8_t>();
    if (op >= opcode_base) {  // special: advance the address and the line, then a row
      const uint8_t adjusted = op - opcode_base;
      address += uint64_t(adjusted / line_range) * min_instruction;
      line += static_cast<uint64_t>(int64_t{line_base} + adjusted % line_range);
      emit(false);
    } else if (op == 0) {  // extended
      const uint64_t size = r.uleb();
      const size_t next = r.at + size;
      const uint8_t sub = size ? r.fixed<uint8_t>() : 0;
      if (sub == DW_LNE_end_sequence) {
        emit(true);
        if (!kernel.empty()) out[kernel] = std::move(rows);
        rows.clear(), kernel.clear(), address = 0, file = 1, line = 1;
      } else if (sub == DW_LNE_set_address) {
        const auto section = relocated.find(r.at);
        address = r.fixed<uint64_t>();
        if (section != relocated.end() && section->second < elf.headers.size()) {
          const std::string_view name = elf.name(elf.headers[section->second]);
          if (name.rfind(".text.", 0) == 0) kernel = std::string(name.substr(6));
        }
      }
      r.at = next;
    } else if (op == DW_LNS_copy) {
      emit(false);
    } else if (op == DW_LNS_advance_pc) {
      address += r.uleb() * min_instruction;
    } else if (op == DW_LNS_advance_line) {
      line += static_cast<uint64_t>(r.sleb());
    } else if (op == DW_LNS_set_file) {
      file = r.uleb();
    } else if (op == DW_LNS_const_add_pc) {
      address += uint64_t((255 - opcode_base) / line_range) * min_instruction;
    } else if (op == DW_LNS_fixed_advance_pc) {
      address += r.fixed<uint16_t>();
    } else {  // set_column, negate_stmt, basic_block, and the rest: skip their operands
      for (uint8_t i = 0; i < operands[op]; ++i) r.uleb();
    }
  }
  r.at = end;
  return !r.bad;
}

}  // namespace

std::map<std::string, std::vector<LineRow>> cubin_lines(std::string_view image) {
  std::map<std::string, std::vector<LineRow>> out;
  const ElfSections elf = elf_sections(image);
  for (size_t i = 0; i < elf.headers.size(); ++i) {
    if (elf.name(elf.headers[i]) != ".debug_line") continue;
    const std::map<uint64_t, uint32_t> relocated = relocated_sections(image, elf, i);
    Reader r{section_bytes(image, elf.headers[i])};
    while (r.at < r.bytes.size() && read_unit(r, elf, relocated, out)) {
    }
  }
  for (auto& [kernel, rows] : out)
    std::stable_sort(rows.begin(), rows.end(), [](const LineRow& a, const LineRow& b) { return a.offset < b.offset; });
  return out;
}

std::optional<LineRow> line_at(const std::vector<LineRow>& rows, uint64_t offset) {
  auto it =
      std::upper_bound(rows.begin(), rows.end(), offset, [](uint64_t o, const LineRow& row) { return o < row.offset; });
  if (it == rows.begin()) return std::nullopt;
  --it;
  if (it->end) return std::nullopt;
  return *it;
}

}  // namespace cuaudit
