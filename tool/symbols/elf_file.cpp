#include "elf_file.h"

#include <elf.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <vector>

#include <fmt/format.h>

namespace cuaudit {

std::string read_elf_build_id(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  Elf64_Ehdr eh;
  if (!in.read(reinterpret_cast<char*>(&eh), sizeof eh)) return {};
  if (memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 || eh.e_ident[EI_CLASS] != ELFCLASS64) return {};
  if (eh.e_phentsize != sizeof(Elf64_Phdr) || eh.e_phnum == 0 || eh.e_phnum > 4096) return {};
  std::vector<Elf64_Phdr> phdrs(eh.e_phnum);
  in.seekg(static_cast<std::streamoff>(eh.e_phoff));
  if (!in.read(reinterpret_cast<char*>(phdrs.data()), static_cast<std::streamsize>(phdrs.size() * sizeof(Elf64_Phdr))))
    return {};
  for (const Elf64_Phdr& ph : phdrs) {
    if (ph.p_type != PT_NOTE || ph.p_filesz > (1u << 20)) continue;
    std::vector<unsigned char> notes(ph.p_filesz);
    in.seekg(static_cast<std::streamoff>(ph.p_offset));
    if (!in.read(reinterpret_cast<char*>(notes.data()), static_cast<std::streamsize>(notes.size()))) return {};
    size_t pos = 0;
    while (pos + sizeof(Elf64_Nhdr) <= notes.size()) {
      Elf64_Nhdr nh;
      memcpy(&nh, notes.data() + pos, sizeof nh);
      const size_t name = pos + sizeof nh;
      const size_t desc = name + ((nh.n_namesz + 3) & ~3u);
      if (desc + nh.n_descsz > notes.size()) break;
      if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 && memcmp(notes.data() + name, "GNU", 4) == 0) {
        std::string hex;
        for (size_t i = 0; i < nh.n_descsz; ++i) hex += fmt::format("{:02x}", notes[desc + i]);
        return hex;
      }
      pos = desc + ((nh.n_descsz + 3) & ~3u);
    }
  }
  return {};
}

bool is_position_independent_elf(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  Elf64_Ehdr eh;
  if (!in.read(reinterpret_cast<char*>(&eh), sizeof eh)) return false;
  return memcmp(eh.e_ident, ELFMAG, SELFMAG) == 0 && eh.e_type == ET_DYN;
}

std::string module_file_problem(const ModuleInfo& module) {
  if (access(module.path.c_str(), R_OK) != 0) return fmt::format("{} (not found here)", module.path);
  if (!module.build_id.empty() && read_elf_build_id(module.path) != module.build_id) {
    return fmt::format("{} (rebuilt since the run: build id differs)", module.path);
  }
  return {};
}

}  // namespace cuaudit
