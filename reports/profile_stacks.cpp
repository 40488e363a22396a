#include "profile_stacks.h"

#include <algorithm>

#include "text_helpers.h"

namespace cuaudit::report {
namespace {

// What runs before main: libc's start and the executable's _start.
bool is_process_start(const Frame& f) {
  const std::string module = basename_of(f.module);
  return module.rfind("libc.so", 0) == 0 || module.rfind("libc-", 0) == 0 || f.function == "_start" ||
         f.function.rfind("__libc_start", 0) == 0;
}

}  // namespace

bool is_interpreter_frame(const Frame& f) {
  const std::string module = basename_of(f.module);
  return module.rfind("libpython", 0) == 0 || module.rfind("python3", 0) == 0;
}

std::vector<const Frame*> profile_frames(const std::vector<Frame>& stack) {
  std::vector<const Frame*> out;
  if (std::none_of(stack.begin(), stack.end(), is_python_frame)) {
    for (const Frame& f : stack) out.push_back(&f);
    return out;
  }
  // The native frames (before the Python ones) less the interpreter's, and less the interpreter's
  // main loop and the process's start beyond the last native frame of other code.
  size_t native = 0;
  while (native < stack.size() && !is_python_frame(stack[native])) ++native;
  size_t end = native;
  while (end > 0 && (is_interpreter_frame(stack[end - 1]) || is_process_start(stack[end - 1]))) --end;
  for (size_t i = 0; i < end; ++i) {
    if (!is_interpreter_frame(stack[i])) out.push_back(&stack[i]);
  }
  for (size_t i = native; i < stack.size(); ++i) out.push_back(&stack[i]);
  return out;
}

}  // namespace cuaudit::report
