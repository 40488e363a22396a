// Facts read from ELF files on disk: is this module file the one that ran, and how is it loaded.
#pragma once

#include <string>

namespace cuaudit {

// Lowercase hex, or empty when the file is unreadable, not ELF64, or has no build id.
std::string read_elf_build_id(const std::string& path);

// True for ET_DYN objects (shared libraries, position-independent executables).
bool is_position_independent_elf(const std::string& path);

}  // namespace cuaudit
