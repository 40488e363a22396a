// Separate debug files: where the debug information of a module is when its own file has none (a
// distribution's stripped libraries) or when the module is not on this machine at all. Looked for
// as gdb and elfutils look (https://sourceware.org/gdb/current/onlinedocs/gdb.html/Separate-Debug-Files.html):
//   1. by the build id the run recorded, under each debug directory: DIR/.build-id/ab/cdef....debug
//      (what Debian's -dbgsym and Fedora's -debuginfo packages install under /usr/lib/debug);
//   2. by the module's .gnu_debuglink name: beside it, in its .debug folder, under each DIR;
//   3. from the debuginfod servers DEBUGINFOD_URLS names, through elfutils' client library
//      (libdebuginfod.so.1, loaded when needed: the tool runs where it is not installed); an empty
//      DEBUGINFOD_URLS asks none, as for gdb and elfutils' tools.
// A file found by name must carry the recorded build id: another build's lines would be wrong.
#pragma once

#include <string>
#include <vector>

#include "trace_model.h"

namespace cuaudit {

struct DebugFileSearch {
  std::vector<std::string> directories;  // --debug-file-directory, in order; /usr/lib/debug is always last
};

// The directories searched, /usr/lib/debug appended when not given.
std::vector<std::string> debug_directories(const DebugFileSearch& search);

// A separate file with `module`'s debug information, or empty.
std::string find_debug_file(const ModuleInfo& module, const DebugFileSearch& search);

// What would give `module` names (for the note on a module without symbols): where its debug file
// would have to be, and the ways to put it there.
std::string debug_file_advice(const ModuleInfo& module, const DebugFileSearch& search);

}  // namespace cuaudit
