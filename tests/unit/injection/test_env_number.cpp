// The launcher's numeric settings as the injection reads them: a malformed one is the default, never
// a wrapped or cut number.
#include <doctest/doctest.h>

#include <cerrno>
#include <cstdlib>

#include "env_number.h"

using cuaudit::inject::number_from_env;

namespace {
constexpr const char* kName = "CUAUDIT_TEST_ENV_NUMBER";
uint64_t read_as(const char* value) {
  setenv(kName, value, 1);
  const uint64_t n = number_from_env(kName, 7, 60000, "milliseconds");
  unsetenv(kName);
  return n;
}
}  // namespace

TEST_CASE("a setting from the environment: digits in range are taken, anything else is the default") {
  unsetenv(kName);
  CHECK(number_from_env(kName, 7, 60000, "milliseconds") == 7);
  CHECK(read_as("") == 7);
  CHECK(read_as("0") == 0);
  CHECK(read_as("250") == 250);
  CHECK(read_as("60000") == 60000);
  CHECK(read_as("60001") == 7);  // over the bound
  CHECK(read_as("-1") == 7);     // strtoull would wrap it to 2^64 - 1
  CHECK(read_as(" 5") == 7);     // strtoull would skip the blank
  CHECK(read_as("+5") == 7);
  CHECK(read_as("5ms") == 7);
  CHECK(read_as("99999999999999999999") == 7);  // over 2^64: ERANGE
  setenv(kName, "18446744073709551615", 1);
  CHECK(number_from_env(kName, 1, ~uint64_t{0}, "bytes") == ~uint64_t{0});
  unsetenv(kName);
}

TEST_CASE("reading a setting leaves the program's errno alone") {
  errno = EAGAIN;
  CHECK(read_as("99999999999999999999") == 7);
  CHECK(errno == EAGAIN);
  errno = 0;
  CHECK(read_as("12") == 12);
  CHECK(errno == 0);
}
