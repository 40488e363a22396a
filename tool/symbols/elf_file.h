// Facts read from ELF files on disk: is this module file the one that ran, and how is it loaded.
#pragma once

#include <string>

#include "trace_model.h"

namespace cuaudit {

// Lowercase hex, or empty when the file is unreadable, not ELF64, or has no build id.
std::string read_elf_build_id(const std::string& path);

// Whether the file holds DWARF line and function information of its own (.debug_info with
// contents: a stripped file's is gone, a separate debug file's code sections are empty instead).
bool has_debug_info(const std::string& path);

// The file name in the .gnu_debuglink section (the separate debug file's name), or empty.
std::string read_debuglink(const std::string& path);

// True for ET_DYN objects (shared libraries, position-independent executables).
bool is_position_independent_elf(const std::string& path);

// Why `module`'s file cannot stand for the object that ran (missing, or rebuilt since: another
// build id), or empty when it can.
std::string module_file_problem(const ModuleInfo& module);

}  // namespace cuaudit
