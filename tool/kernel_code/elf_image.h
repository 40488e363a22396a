// Reading a CUDA ELF object (a cubin) held in memory: its section headers and their bytes, checked
// against the image's size. A damaged or foreign file reads as having no sections.
#pragma once

#include <elf.h>

#include <cstring>
#include <string_view>
#include <vector>

namespace cuaudit {

template <typename T>
bool read_at(std::string_view image, uint64_t offset, T& out) {
  if (offset > image.size() || image.size() - offset < sizeof(T)) return false;
  memcpy(&out, image.data() + offset, sizeof(T));
  return true;
}

inline std::string_view section_bytes(std::string_view image, const Elf64_Shdr& s) {
  if (s.sh_type == SHT_NOBITS || s.sh_offset > image.size() || image.size() - s.sh_offset < s.sh_size) return {};
  return image.substr(s.sh_offset, s.sh_size);
}

inline std::string_view c_string(std::string_view table, uint64_t offset) {
  if (offset >= table.size()) return {};
  const size_t end = table.find('\0', offset);
  return table.substr(offset, end == std::string_view::npos ? table.size() - offset : end - offset);
}

struct ElfSections {
  std::vector<Elf64_Shdr> headers;
  std::string_view names;  // the section name string table
  std::string_view name(const Elf64_Shdr& s) const { return c_string(names, s.sh_name); }
};

// The sections of a 64-bit little-endian ELF object; none when `image` is not one.
inline ElfSections elf_sections(std::string_view image) {
  ElfSections out;
  Elf64_Ehdr header;
  if (!read_at(image, 0, header) || memcmp(header.e_ident, ELFMAG, SELFMAG) != 0 ||
      header.e_ident[EI_CLASS] != ELFCLASS64 || header.e_ident[EI_DATA] != ELFDATA2LSB ||
      header.e_shentsize != sizeof(Elf64_Shdr))
    return out;
  out.headers.resize(header.e_shnum);
  for (size_t i = 0; i < out.headers.size(); ++i) {
    if (!read_at(image, header.e_shoff + i * sizeof(Elf64_Shdr), out.headers[i])) return {};
  }
  if (header.e_shstrndx >= out.headers.size()) return {};
  out.names = section_bytes(image, out.headers[header.e_shstrndx]);
  return out;
}

}  // namespace cuaudit
