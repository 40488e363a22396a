#include "python_frames.h"

#include <string_view>

namespace cuaudit {
namespace {

// cuaudit_hooks.py and its framework modules (cuaudit_hooks_cupy.py, ...).
bool is_cuaudit_hook_file(const std::string& file) {
  const std::string_view folder = "/cuaudit_site/";
  const size_t at = file.rfind("/cuaudit_site/cuaudit_hooks");
  return at != std::string::npos && file.find('/', at + folder.size()) == std::string::npos && file.size() > 3 &&
         file.compare(file.size() - 3, 3, ".py") == 0;
}

}  // namespace

std::vector<report::Frame> python_frames(const ProcessTrace& trace, uint64_t python_stack_id) {
  std::vector<report::Frame> out;
  auto it = trace.python_stacks.find(python_stack_id);
  if (it == trace.python_stacks.end()) return out;
  for (const PythonFrameInfo& f : it->second) {
    if (f.file == "<shim>") continue;            // CPython's entry trampoline between C and Python frames
    if (is_cuaudit_hook_file(f.file)) continue;  // cuaudit's own memory hook, calling the injection
    report::Frame frame;
    frame.function = f.function;
    frame.file = f.file;
    frame.line = static_cast<int>(f.line);
    frame.module = "python";
    out.push_back(std::move(frame));
  }
  return out;
}

bool is_library_python_file(const std::string& file) {
  return file.empty() || file.front() == '<' || file.find("/site-packages/") != std::string::npos ||
         file.find("/dist-packages/") != std::string::npos || file.find("/lib/python3") != std::string::npos;
}

size_t user_python_frame(const std::vector<report::Frame>& frames) {
  for (size_t i = 0; i < frames.size(); ++i) {
    if (!is_library_python_file(frames[i].file)) return i;
  }
  return frames.empty() ? frames.size() : 0;
}

}  // namespace cuaudit
