#include "in_target_log.h"

#include <unistd.h>

#include <cstdarg>
#include <cstdio>

namespace cuaudit::inject {
namespace {

void emit(const char* level, const char* format, va_list args) noexcept {
  char line[1024];
  int n = snprintf(line, sizeof line, "cuaudit: %s: ", level);
  if (n < 0) return;
  int m = vsnprintf(line + n, sizeof line - static_cast<size_t>(n), format, args);
  if (m < 0) return;
  size_t len = static_cast<size_t>(n) + static_cast<size_t>(m);
  if (len > sizeof line - 2) len = sizeof line - 2;
  line[len++] = '\n';
  ssize_t ignored = write(STDERR_FILENO, line, len);
  (void)ignored;
}

}  // namespace

void log_warning(const char* format, ...) noexcept {
  va_list args;
  va_start(args, format);
  emit("warning", format, args);
  va_end(args);
}

void log_info(const char* format, ...) noexcept {
  va_list args;
  va_start(args, format);
  emit("info", format, args);
  va_end(args);
}

void log_error(const char* format, ...) noexcept {
  va_list args;
  va_start(args, format);
  emit("error", format, args);
  va_end(args);
}

}  // namespace cuaudit::inject
