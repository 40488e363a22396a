// What cuaudit's Python hooks and the tool agree on (python_contract.inc): each framework's hook,
// memory source and file; the actions and columns of a framework's file; the hooks-state file. The
// hooks' module (cuaudit_contract.py) and the public C header (cuaudit_pool_api.h) are generated from
// the same lists by tool/gen_python_contract.py.
#pragma once

#include <cstddef>
#include <cstring>

#include "run_dir_layout.h"

namespace cuaudit::python_contract {

enum class Framework : unsigned char {
#define CUAUDIT_FRAMEWORK(id, module, hook, key, entry, format, version, named) id,
#include "python_contract.inc"
#undef CUAUDIT_FRAMEWORK
};

struct FrameworkInfo {
  const char* module;          // the framework's module: "torch"
  const char* hook;            // the hook module that follows it: "cuaudit_hooks_torch"
  const char* source_key;      // its memory source's key (memory_sources.inc)
  const run_dir::Entry* file;  // the file its hook writes; null where its blocks reach the injection live
  const char* format;          // that file's "format"
  int version;                 // the newest version this build reads and writes
  const char* hook_name;       // how notes name the hook: "PyTorch's memory history"
};

namespace file_of {  // a run_dir_layout.inc entry by its name, and None
#define CUAUDIT_RUN_ENTRY(id, prefix, suffix, kind, writer) inline constexpr const run_dir::Entry* id = &run_dir::id;
#include "run_dir_layout.inc"
#undef CUAUDIT_RUN_ENTRY
inline constexpr const run_dir::Entry* None = nullptr;
}  // namespace file_of

inline constexpr FrameworkInfo kFrameworks[] = {
#define CUAUDIT_FRAMEWORK(id, module, hook, key, entry, format, version, named) \
  {module, hook, key, file_of::entry, format, version, named},
#include "python_contract.inc"
#undef CUAUDIT_FRAMEWORK
};

inline const FrameworkInfo& framework_info(Framework f) { return kFrameworks[static_cast<size_t>(f)]; }

// The framework whose module is `module` ("torch"), or nullptr.
inline const FrameworkInfo* framework_by_module(const char* module) {
  for (const FrameworkInfo& f : kFrameworks) {
    if (std::strcmp(f.module, module) == 0) return &f;
  }
  return nullptr;
}

// The actions of a framework's file (the second column of its "events" rows).
enum HistoryAction : int {
#define CUAUDIT_HISTORY_ACTION(id, number, name) k##id = number,
#include "python_contract.inc"
#undef CUAUDIT_HISTORY_ACTION
};

// The columns of an "events" row.
enum HistoryColumn : size_t {
#define CUAUDIT_HISTORY_COLUMN(id, index, meaning) kColumn##id = index,
#include "python_contract.inc"
#undef CUAUDIT_HISTORY_COLUMN
};

struct DocumentInfo {
  const run_dir::Entry* file;
  const char* format;
  int version;
};
#define CUAUDIT_HOOKS_DOCUMENT(id, entry, format, version) \
  inline constexpr DocumentInfo k##id{file_of::entry, format, version};
#include "python_contract.inc"
#undef CUAUDIT_HOOKS_DOCUMENT

}  // namespace cuaudit::python_contract
