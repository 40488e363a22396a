#include <doctest/doctest.h>

#include <cstdlib>

#include "output_path.h"

using cuaudit::expand_output_path;
using cuaudit::output_path_writable;

TEST_CASE("output paths expand %p, %q{ENV} and %% as compute-sanitizer does") {
  setenv("CUAUDIT_TEST_RANK", "3", 1);
  CHECK(expand_output_path("report-%p.json", 42) == "report-42.json");
  CHECK(expand_output_path("run-%q{CUAUDIT_TEST_RANK}.json", 1) == "run-3.json");
  CHECK(expand_output_path("100%%.txt", 1) == "100%.txt");
  CHECK(expand_output_path("plain.txt", 1) == "plain.txt");
}

TEST_CASE("an output in a missing or unwritable directory is refused with the reason") {
  std::string why;
  CHECK_FALSE(output_path_writable("/nonexistent-dir/report.json", why));
  CHECK(why.find("does not exist") != std::string::npos);
  CHECK(output_path_writable("/tmp/cuaudit-report-test.json", why));
}

TEST_CASE("%q{NAME} of an unset variable, or one holding a path, is refused") {
  unsetenv("CUAUDIT_TEST_UNSET");
  CHECK_THROWS_WITH(expand_output_path("run-%q{CUAUDIT_TEST_UNSET}", 1), doctest::Contains("is not set"));
  setenv("CUAUDIT_TEST_RANK", "../x", 1);
  CHECK_THROWS_WITH(expand_output_path("run-%q{CUAUDIT_TEST_RANK}", 1), doctest::Contains("not a file name part"));
  setenv("CUAUDIT_TEST_RANK", "3", 1);
}
