// The names in a run directory (run_dir_layout.inc), for the launcher, the injection and the tool.
#pragma once

namespace cuaudit::run_dir {

enum class EntryKind { File, PerProcess, Directory };

struct Entry {
  const char* prefix;
  const char* suffix;
  EntryKind kind;
};

#define CUAUDIT_RUN_ENTRY(id, prefix, suffix, kind, writer) inline constexpr Entry id{prefix, suffix, EntryKind::kind};
#include "run_dir_layout.inc"
#undef CUAUDIT_RUN_ENTRY

}  // namespace cuaudit::run_dir
