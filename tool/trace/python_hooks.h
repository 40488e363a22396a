// What cuaudit's Python hooks did in a process (python/cuaudit_site/cuaudit_hooks.py writes
// python-hooks-<pid>.json as it changes): which framework hooks attached, which were off or failed
// and why, CuPy's threads. It becomes the process's notes, so that a report with no framework
// finding says whether anything was watching.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "trace_model.h"

namespace cuaudit {

// The hooks file of process `pid` in run directory `dir` (python-hooks-<pid>.json).
std::string python_hooks_path(const std::string& dir, uint64_t pid);

// The notes of `process`'s hooks file in run directory `dir`, if it has one.
void load_python_hooks(const std::string& dir, const ProcessTrace& process, std::vector<std::string>& notes);

// The same from the file's text (throws std::runtime_error on a malformed file). Exposed for the tests.
std::vector<std::string> python_hooks_notes(const std::string& json_text);

// Whether a process's hooks write framework files while it runs (PyTorch's or JAX's hook attached),
// and the last request of the tool they answered (framework_request.h); from the hooks file's text.
struct HooksAnswer {
  bool writes = false;
  std::string answered;
};
HooksAnswer python_hooks_answer(const std::string& json_text);
// The same of process `pid`'s hooks file in `dir`; no answer when it is missing or unreadable.
HooksAnswer python_hooks_answer(const std::string& dir, uint64_t pid);

}  // namespace cuaudit
