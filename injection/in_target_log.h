// The only way the injection talks to the user: one prefixed line on stderr, written with
// write(2) so that it works in any state of the target (no iostream, no stdio buffers).
#pragma once

namespace cuaudit::inject {

void log_warning(const char* format, ...) noexcept __attribute__((format(printf, 1, 2)));
void log_error(const char* format, ...) noexcept __attribute__((format(printf, 1, 2)));
void log_info(const char* format, ...) noexcept __attribute__((format(printf, 1, 2)));

}  // namespace cuaudit::inject
