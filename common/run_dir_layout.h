// The names in a run directory (run_dir_layout.inc), for the launcher, the injection and the tool.
#pragma once

#include <string_view>

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

inline constexpr Entry kEntries[] = {
#define CUAUDIT_RUN_ENTRY(id, prefix, suffix, kind, writer) id,
#include "run_dir_layout.inc"
#undef CUAUDIT_RUN_ENTRY
};

// Whether a file named `name` directly in a run directory is one of the run's own (a trace, run.json,
// a cache, a framework's file): a report written there would destroy it.
inline bool is_run_entry(std::string_view name) {
  for (const Entry& e : kEntries) {
    const std::string_view prefix(e.prefix), suffix(e.suffix);
    if (e.kind != EntryKind::PerProcess) {
      if (name.substr(0, prefix.size()) == prefix && name.size() >= prefix.size() &&
          name.substr(prefix.size()) == suffix)
        return true;
      continue;
    }
    if (name.size() > prefix.size() + suffix.size() && name.substr(0, prefix.size()) == prefix &&
        name.substr(name.size() - suffix.size()) == suffix)
      return true;
  }
  return false;
}

}  // namespace cuaudit::run_dir
