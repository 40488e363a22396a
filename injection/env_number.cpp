#include "env_number.h"

#include <cerrno>
#include <cstdlib>

#include "in_target_log.h"

namespace cuaudit::inject {

uint64_t number_from_env(const char* name, uint64_t fallback, uint64_t max, const char* what) noexcept {
  const char* v = getenv(name);
  if (!v || !*v) return fallback;
  char* end = nullptr;
  const int program_errno = errno;  // the program's, not ours to change
  errno = 0;
  const unsigned long long n = strtoull(v, &end, 10);
  const bool out_of_range = errno == ERANGE;
  errno = program_errno;
  // strtoull takes a sign and leading blanks ("-1" wraps to 2^64 - 1): only digits are a number here.
  if (*v < '0' || *v > '9' || *end != '\0' || out_of_range || n > max) {
    log_warning("ignoring %s=%s (expected %s, 0 to %llu)", name, v, what, static_cast<unsigned long long>(max));
    return fallback;
  }
  return n;
}

}  // namespace cuaudit::inject
