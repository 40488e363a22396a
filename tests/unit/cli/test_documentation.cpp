// --help names the documentation where it is: this test binary is no installed tool, so the
// checkout's docs/ (the build's source) is what it finds.
#include <doctest/doctest.h>

#include <filesystem>

#include "documentation.h"

using namespace cuaudit;

TEST_CASE("documentation paths: each docs/NAME.md in a help text names the file where it is") {
  const std::string dir = documentation_dir();
  REQUIRE_FALSE(dir.empty());
  CHECK(std::filesystem::is_regular_file(std::filesystem::path(dir) / "EXIT_CODES.md"));
  CHECK(with_documentation_paths("See docs/EXIT_CODES.md.") == "See " + dir + "/EXIT_CODES.md.");
  CHECK(with_documentation_paths("(docs/LONG_RUNNING.md); docs/RESOURCES.md") ==
        "(" + dir + "/LONG_RUNNING.md); " + dir + "/RESOURCES.md");
  CHECK(with_documentation_paths("no reference here") == "no reference here");
}
