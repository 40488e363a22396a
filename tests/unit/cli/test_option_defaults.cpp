#include <doctest/doctest.h>

#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "option_defaults.h"

using namespace cuaudit;

namespace {

// A directory tree of its own, the working directory while it lives, and no CUAUDIT_OPTIONS*.
struct Tree {
  std::filesystem::path root, before = std::filesystem::current_path();
  Tree() {
    char pattern[] = "/tmp/cuaudit-defaults-XXXXXX";
    root = mkdtemp(pattern);
    std::filesystem::create_directories(root / "a" / "b");
    std::filesystem::current_path(root / "a" / "b");
    unsetenv("CUAUDIT_OPTIONS");
    unsetenv("CUAUDIT_OPTIONS_FILE");
  }
  ~Tree() {
    std::filesystem::current_path(before);
    std::filesystem::remove_all(root);
    unsetenv("CUAUDIT_OPTIONS");
    unsetenv("CUAUDIT_OPTIONS_FILE");
  }
  std::string write(const std::string& relative, const std::string& text) const {
    const std::string path = (root / relative).string();
    std::ofstream(path) << text;
    chmod(path.c_str(), 0644);
    return path;
  }
};

}  // namespace

TEST_CASE("the options file is the nearest .cuauditrc from the working directory up") {
  Tree t;
  CHECK(find_options_file((t.root / "a" / "b").string()).find(t.root.string()) == std::string::npos);
  const std::string top = t.write(".cuauditrc", "--error-exitcode 9\n");
  CHECK(find_options_file((t.root / "a" / "b").string()) == top);
  const std::string nearer = t.write("a/.cuauditrc", "--leak-check summary\n");
  CHECK(find_options_file((t.root / "a" / "b").string()) == nearer);
  CHECK(find_options_file(t.root.string()) == top);
}

TEST_CASE(
    "the options file's words: comments and blank lines skipped, quotes as in CUAUDIT_OPTIONS, then the "
    "environment's") {
  Tree t;
  const std::string path =
      t.write("a/.cuauditrc", "# the project's gate\n\n--error-exitcode 9\n  --suppressions 'ci rules.supp'\n");
  setenv("CUAUDIT_OPTIONS", "--leak-check summary", 1);
  const DefaultOptions d = read_default_options();
  CHECK(d.file == path);
  CHECK(d.from_file == std::vector<std::string>{"--error-exitcode", "9", "--suppressions", "ci rules.supp"});
  CHECK(d.from_environment == std::vector<std::string>{"--leak-check", "summary"});
  CHECK(d.warnings.empty());
  CLI::App app;
  CHECK(default_words(d, app, nullptr) == std::vector<std::string>{"--error-exitcode", "9", "--suppressions",
                                                                   "ci rules.supp", "--leak-check", "summary"});
}

TEST_CASE("a file others can write is passed over with a warning, and CUAUDIT_OPTIONS_FILE chooses another or none") {
  Tree t;
  const std::string path = t.write(".cuauditrc", "--error-exitcode 9\n");
  chmod(path.c_str(), 0664);  // group-writable: someone else could have set the options
  DefaultOptions d = read_default_options();
  CHECK(d.file.empty());
  CHECK(d.from_file.empty());
  REQUIRE(d.warnings.size() == 1);
  CHECK(d.warnings[0].find(path + " was not read") == 0);

  const std::string chosen = t.write("ci.opts", "--error-exitcode 4\n");
  setenv("CUAUDIT_OPTIONS_FILE", chosen.c_str(), 1);
  d = read_default_options();
  CHECK(d.file == chosen);
  CHECK(d.from_file == std::vector<std::string>{"--error-exitcode", "4"});
  setenv("CUAUDIT_OPTIONS_FILE", "", 1);  // none, whatever lies above
  CHECK(read_default_options().file.empty());
  setenv("CUAUDIT_OPTIONS_FILE", (t.root / "missing").c_str(), 1);
  CHECK_THROWS_WITH_AS(read_default_options(), doctest::Contains("missing: cannot be read"), std::invalid_argument);
}

TEST_CASE("words the file or environment cannot give are refused naming where they came from") {
  Tree t;
  const std::string path = t.write(".cuauditrc", "--suppressions 'unterminated\n");
  CHECK_THROWS_WITH_AS(read_default_options(), doctest::Contains((path + ": unterminated").c_str()),
                       std::invalid_argument);
  std::filesystem::remove(path);
  setenv("CUAUDIT_OPTIONS", "--json \"x", 1);
  CHECK_THROWS_WITH_AS(read_default_options(), doctest::Contains("CUAUDIT_OPTIONS: unterminated"),
                       std::invalid_argument);
}

TEST_CASE("a command that takes fewer options keeps the defaults' words it knows, values and all") {
  std::string text, json, suppressions;
  int code = 0;
  bool quiet = false;
  CLI::App every;
  every.add_option("--error-exitcode", code);
  every.add_option("--suppressions", suppressions);
  every.add_option("--json", json);
  every.add_flag("-q,--quiet", quiet);
  CLI::App merge;
  merge.add_option("--error-exitcode", code);
  merge.add_option("--json", json);
  const std::vector<std::string> words = {"--suppressions",  "--json",        "--error-exitcode", "3", "-q",
                                          "--json=out.json", "--unknown-flag"};
  // --suppressions' value is the next word even when it looks like an option; -q is a flag.
  CHECK(words_taken_by(merge, every, words) == std::vector<std::string>{"--error-exitcode", "3", "--json=out.json"});
}
