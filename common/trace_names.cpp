#include "trace_format.h"

namespace cuaudit::trace {

const char* launch_path_name(uint8_t path) noexcept {
  switch (path) {
#define CUAUDIT_LAUNCH_PATH(id, number, name) \
  case number:                                \
    return name;
#include "launch_paths.inc"
#undef CUAUDIT_LAUNCH_PATH
    default:
      return nullptr;
  }
}

const char* exit_function_name(ExitHow how) noexcept {
  switch (how) {
    case ExitHow::Exit:
      return "exit";
    case ExitHow::UnderscoreExit:
      return "_exit";
    case ExitHow::QuickExit:
      return "quick_exit";
  }
  return "exit";
}

}  // namespace cuaudit::trace
