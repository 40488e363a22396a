#include "elf_file.h"

#include <elf.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
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

namespace {

// Calls `visit(name, header, section)` for each section of the ELF file at `path` until it returns true.
template <typename Visit>
bool find_section(const std::string& path, Visit visit) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  elf_version(EV_CURRENT);
  Elf* elf = elf_begin(fd, ELF_C_READ, nullptr);
  bool found = false;
  size_t names = 0;
  if (elf && elf_kind(elf) == ELF_K_ELF && elf_getshdrstrndx(elf, &names) == 0) {
    for (Elf_Scn* scn = elf_nextscn(elf, nullptr); scn && !found; scn = elf_nextscn(elf, scn)) {
      GElf_Shdr header;
      if (!gelf_getshdr(scn, &header)) continue;
      const char* name = elf_strptr(elf, names, header.sh_name);
      if (name) found = visit(std::string(name), header, scn);
    }
  }
  if (elf) elf_end(elf);
  close(fd);
  return found;
}

}  // namespace

bool has_debug_info(const std::string& path) {
  return find_section(path, [](const std::string& name, const GElf_Shdr& header, Elf_Scn*) {
    return (name == ".debug_info" || name == ".zdebug_info") && header.sh_type != SHT_NOBITS && header.sh_size > 0;
  });
}

std::string read_debuglink(const std::string& path) {
  std::string link;
  find_section(path, [&](const std::string& name, const GElf_Shdr&, Elf_Scn* scn) {
    if (name != ".gnu_debuglink") return false;
    if (Elf_Data* data = elf_getdata(scn, nullptr); data && data->d_buf && data->d_size > 0) {
      const char* text = static_cast<const char*>(data->d_buf);
      link.assign(text, strnlen(text, data->d_size));  // the name, then padding and a CRC
    }
    return true;
  });
  return link.find('/') == std::string::npos ? link : std::string();  // a bare name, never a path
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
