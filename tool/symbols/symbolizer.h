// Turns recorded return addresses into function, file and line, after the process is gone.
//
// Each address is resolved in the module file the trace recorded (DWARF through libbacktrace),
// but only when that file still has the build id the process ran with; a module whose file is
// stripped, missing or rebuilt is resolved in its separate debug file (debug_files.h) instead. What was resolved is
// kept in a symbol cache saved beside the trace (symbols.json), so a recorded run stays readable on a machine that
// lacks the program's binaries: `cuaudit report` copied anywhere shows the same stacks.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "debug_files.h"
#include "report_model.h"
#include "trace_model.h"

namespace cuaudit {

struct SourceLocation {
  std::string function;  // demangled
  std::string file;
  int line = 0;
  std::string mangled;  // the linkage name, when it differs from `function` (--demangle no)
};

class Symbolizer {
 public:
  Symbolizer();
  ~Symbolizer();
  Symbolizer(const Symbolizer&) = delete;
  Symbolizer& operator=(const Symbolizer&) = delete;

  // Where separate debug files are looked for (debug_files.h); before the first symbolize().
  void set_debug_file_search(DebugFileSearch search) { debug_search_ = std::move(search); }

  // Loads a cache written by save_cache; a missing file is not an error. Returns false with
  // `error` set when the file exists but cannot be used.
  bool load_cache(const std::string& path, std::string& error);
  bool save_cache(const std::string& path, std::string& error) const;

  // All frames for one return address, innermost inlined function first. `module` may be null
  // (an address outside every recorded module).
  std::vector<report::Frame> symbolize(uint64_t return_address, const ModuleInfo* module);

  // Why a module has no debug information here (its file missing, another build, stripped and no
  // separate debug file found) and what would give it some, as a note's words; empty if it has.
  std::string why_unavailable(const std::string& module_path) const;

 private:
  struct ModuleState;
  ModuleState* module_state(const ModuleInfo& module);

  // module key -> offset -> locations (hashed: a large run looks up millions of frames)
  std::map<std::string, std::unordered_map<uint64_t, std::vector<SourceLocation>>> cache_;
  // The module asked about last and its cache: frames of one stack, and stacks in a row, mostly
  // share a module, and its key is a string built per lookup.
  std::string last_build_id_, last_path_;
  std::unordered_map<uint64_t, std::vector<SourceLocation>>* last_cache_ = nullptr;
  std::map<std::string, std::unique_ptr<ModuleState>> states_;
  DebugFileSearch debug_search_;
};

std::string demangle(const char* name);

}  // namespace cuaudit
