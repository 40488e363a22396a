#include "cubin_functions.h"

#include <elf.h>

#include <cstring>
#include <map>

namespace cuaudit {
namespace {

// .nv.info entries: a format byte, an attribute byte, then (format EIFMT_SVAL) a 16-bit payload
// size and the payload, or (other formats) a 16-bit value and nothing more.
constexpr uint8_t kEifmtSval = 0x04;
constexpr uint8_t kEiattrParamCbank = 0x0a;  // payload: section index (32 bits), offset (16), size (16)

template <typename T>
bool read_at(std::string_view image, uint64_t offset, T& out) {
  if (offset > image.size() || image.size() - offset < sizeof(T)) return false;
  memcpy(&out, image.data() + offset, sizeof(T));
  return true;
}

std::string_view section_bytes(std::string_view image, const Elf64_Shdr& s) {
  if (s.sh_type == SHT_NOBITS || s.sh_offset > image.size() || image.size() - s.sh_offset < s.sh_size) return {};
  return image.substr(s.sh_offset, s.sh_size);
}

std::string_view c_string(std::string_view table, uint64_t offset) {
  if (offset >= table.size()) return {};
  const size_t end = table.find('\0', offset);
  return table.substr(offset, end == std::string_view::npos ? table.size() - offset : end - offset);
}

uint32_t param_base_of(std::string_view info, uint32_t fallback) {
  for (size_t i = 0; i + 4 <= info.size();) {
    const auto format = static_cast<uint8_t>(info[i]), attribute = static_cast<uint8_t>(info[i + 1]);
    uint16_t size = 0;
    memcpy(&size, info.data() + i + 2, 2);
    if (format != kEifmtSval) {
      i += 4;
      continue;
    }
    if (attribute == kEiattrParamCbank && size >= 8 && i + 4 + size <= info.size()) {
      uint16_t offset = 0;
      memcpy(&offset, info.data() + i + 8, 2);
      return offset;
    }
    i += 4 + size;
  }
  return fallback;
}

}  // namespace

std::vector<CubinFunction> cubin_functions(std::string_view image) {
  Elf64_Ehdr header;
  if (!read_at(image, 0, header) || memcmp(header.e_ident, ELFMAG, SELFMAG) != 0 ||
      header.e_ident[EI_CLASS] != ELFCLASS64 || header.e_ident[EI_DATA] != ELFDATA2LSB ||
      header.e_shentsize != sizeof(Elf64_Shdr))
    return {};
  std::vector<Elf64_Shdr> sections(header.e_shnum);
  for (size_t i = 0; i < sections.size(); ++i) {
    if (!read_at(image, header.e_shoff + i * sizeof(Elf64_Shdr), sections[i])) return {};
  }
  if (header.e_shstrndx >= sections.size()) return {};
  const std::string_view names = section_bytes(image, sections[header.e_shstrndx]);
  std::map<std::string_view, std::string_view> info_of;  // kernel name -> its .nv.info.<name>
  for (const Elf64_Shdr& s : sections) {
    const std::string_view name = c_string(names, s.sh_name);
    if (name.rfind(".nv.info.", 0) == 0) info_of[name.substr(9)] = section_bytes(image, s);
  }
  std::vector<CubinFunction> functions;
  for (const Elf64_Shdr& s : sections) {
    if (s.sh_type != SHT_SYMTAB || s.sh_link >= sections.size() || s.sh_entsize != sizeof(Elf64_Sym)) continue;
    const std::string_view symbols = section_bytes(image, s), strings = section_bytes(image, sections[s.sh_link]);
    for (size_t i = 0; i < symbols.size() / sizeof(Elf64_Sym); ++i) {
      Elf64_Sym symbol;
      memcpy(&symbol, symbols.data() + i * sizeof(Elf64_Sym), sizeof symbol);
      if (ELF64_ST_TYPE(symbol.st_info) != STT_FUNC) continue;
      const std::string_view name = c_string(strings, symbol.st_name);
      if (name.empty()) continue;
      const auto info = info_of.find(name);
      functions.push_back({std::string(name), static_cast<uint32_t>(i),
                           info == info_of.end() ? 0x210u : param_base_of(info->second, 0x210)});
    }
  }
  return functions;
}

}  // namespace cuaudit
