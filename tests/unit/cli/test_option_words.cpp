#include <doctest/doctest.h>

#include <stdexcept>

#include "option_words.h"

using namespace cuaudit;

TEST_CASE("CUAUDIT_OPTIONS splits as a shell splits words") {
  using V = std::vector<std::string>;
  CHECK(split_option_words("--error-exitcode 1  --leak-check\tfull") ==
        V{"--error-exitcode", "1", "--leak-check", "full"});
  CHECK(split_option_words("--suppressions 'my rules.supp'") == V{"--suppressions", "my rules.supp"});
  CHECK(split_option_words("--log-file \"a \\\"b\\\".txt\"") == V{"--log-file", "a \"b\".txt"});
  CHECK(split_option_words("a\\ b ''") == V{"a b", ""});
  CHECK(split_option_words("   ").empty());
  CHECK_THROWS_AS(split_option_words("--log-file 'open"), std::invalid_argument);
  CHECK_THROWS_AS(split_option_words("x\\"), std::invalid_argument);
}

TEST_CASE("did you mean: the nearest option when it is a likely typo") {
  const std::vector<std::string> names = {"--leak-check", "--json", "--junit", "--error-exitcode"};
  CHECK(closest_word("--leak-chek", names) == "--leak-check");
  CHECK(closest_word("--jsn", names) == "--json");
  CHECK(closest_word("--eror-exitcode", names) == "--error-exitcode");
  CHECK_FALSE(closest_word("--frobnicate", names).has_value());
}

TEST_CASE("sizes: bytes, K, M and G in powers of 1024, refused when they are none of these") {
  CHECK(parse_byte_size("4096") == 4096u);
  CHECK(parse_byte_size("512K") == 512u * 1024);
  CHECK(parse_byte_size("1M") == 1024u * 1024);
  CHECK(parse_byte_size("1.5MiB") == 1536u * 1024);
  CHECK(parse_byte_size("2G") == uint64_t{2} << 30);
  CHECK(parse_byte_size("0") == 0u);
  CHECK_FALSE(parse_byte_size("").has_value());
  CHECK_FALSE(parse_byte_size("-1K").has_value());
  CHECK_FALSE(parse_byte_size("1 MB").has_value());
  CHECK_FALSE(parse_byte_size("K").has_value());
  CHECK_FALSE(parse_byte_size("1e30").has_value());
}
