// Facts read from ELF files on disk: is this module file the one that ran, and how is it loaded.
#pragma once

#include <string>

#include "trace_model.h"

namespace cuaudit {

// Lowercase hex, or empty when the file is unreadable, not ELF64, or has no build id.
std::string read_elf_build_id(const std::string& path);

// True for ET_DYN objects (shared libraries, position-independent executables).
bool is_position_independent_elf(const std::string& path);

// Why `module`'s file cannot stand for the object that ran (missing, or rebuilt since: another
// build id), or empty when it can.
std::string module_file_problem(const ModuleInfo& module);

}  // namespace cuaudit
