// A path shown in a command the user may paste (report::shell_word): bash reads it back whole.
#include <doctest/doctest.h>

#include <cstdio>
#include <string>

#include "text_helpers.h"

using cuaudit::report::shell_word;

namespace {

// What bash makes of `word`, as printf %s prints it.
std::string as_bash_reads(const std::string& word) {
  const std::string quoted_for_sh = shell_word("printf %s " + word);  // the command itself, one word for -c
  FILE* p = popen(("bash -c " + quoted_for_sh).c_str(), "r");
  REQUIRE(p != nullptr);
  std::string out;
  char buffer[256];
  for (size_t n; (n = fread(buffer, 1, sizeof buffer, p)) > 0;) out.append(buffer, n);
  pclose(p);
  return out;
}

}  // namespace

TEST_CASE("a path as a shell word: plain when safe, quoted when not, escaped when a terminal must not see it") {
  CHECK(shell_word("/tmp/cuaudit-run-x1Y") == "/tmp/cuaudit-run-x1Y");
  CHECK(shell_word("/tmp/save dir") == "'/tmp/save dir'");
  CHECK(shell_word("it's") == "'it'\\''s'");
  CHECK(shell_word("/tmp/save dir\nx") == "$'/tmp/save dir\\x0ax'");
  CHECK(shell_word("a\u202eb") == "$'a\\xe2\\x80\\xaeb'");
  CHECK(shell_word("") == "''");
  for (const std::string& path :
       {std::string("/tmp/save dir\nx)"), std::string("it's $HOME `id`"), std::string("tab\there\\"),
        std::string("bidi\u202e'q"), std::string("bad\xff"), std::string("plain/path"), std::string("ünïcödé dir")}) {
    CAPTURE(path);
    const std::string word = shell_word(path);
    CHECK(word.find('\n') == std::string::npos);
    CHECK(as_bash_reads(word) == path);
  }
}
