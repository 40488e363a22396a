#include "cubin_functions.h"

#include <cstring>
#include <map>

#include "elf_image.h"

namespace cuaudit {
namespace {

// .nv.info entries: a format byte, an attribute byte, then (format EIFMT_SVAL) a 16-bit payload
// size and the payload, or (other formats) a 16-bit value and nothing more.
constexpr uint8_t kEifmtSval = 0x04;
constexpr uint8_t kEiattrParamCbank = 0x0a;  // payload: section index (32 bits), offset (16), size (16)

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
  const ElfSections elf = elf_sections(image);
  const std::vector<Elf64_Shdr>& sections = elf.headers;
  std::map<std::string_view, std::string_view> info_of;  // kernel name -> its .nv.info.<name>
  for (const Elf64_Shdr& s : sections) {
    const std::string_view name = elf.name(s);
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
