#include <doctest/doctest.h>

#include <stdexcept>

#include "suppression_blocks.h"
#include "suppressions.h"

using namespace cuaudit;

namespace {

report::Frame frame(std::string function, std::string file = "", int line = 0, std::string module = "/opt/app") {
  report::Frame f;
  f.function = std::move(function);
  f.file = std::move(file);
  f.line = line;
  f.module = std::move(module);
  return f;
}

// The demo's leak: process_batch called from main, below the C library's start.
const std::vector<report::Frame> kStack = {frame("process_batch", "/work/examples/demo_leaks.cu", 37),
                                           frame("main", "/work/examples/demo_leaks.cu", 48),
                                           frame("__libc_start_main", "", 0, "/lib/x86_64-linux-gnu/libc.so.6")};

std::vector<FrameLine> lines_of(std::vector<std::string> texts) {
  std::vector<std::pair<int, std::string>> numbered = {{2, "name"}, {3, "leak"}};
  for (size_t i = 0; i < texts.size(); ++i) numbered.emplace_back(static_cast<int>(i + 4), texts[i]);
  return parse_suppression_block(numbered, "t.supp", 1).frames;
}

bool matches(std::vector<std::string> texts) { return frames_match_sequence(lines_of(std::move(texts)), kStack); }

report::Finding leak(std::vector<report::Frame> stack) {
  report::Finding f;
  f.kind = report::FindingKind::Leak;
  f.bytes = 64;
  f.stack = std::move(stack);
  return f;
}

}  // namespace

TEST_CASE("frame lines match from frame 0 down, one frame each, as valgrind's do") {
  CHECK(matches({"fun:process_batch"}));
  CHECK(matches({"fun:process_batch", "fun:main"}));
  CHECK_FALSE(matches({"fun:main"}));  // not frame #0: LeakSanitizer's any-frame rule is another thing
  CHECK_FALSE(matches({"fun:main", "fun:process_batch"}));
  CHECK(matches({"...", "fun:main"}));
  CHECK(matches({"...", "fun:process_batch", "...", "obj:libc.so.6"}));
  CHECK(matches({"fun:process_batch", "...", "fun:main"}));  // `...` may stand for no frame at all
  CHECK_FALSE(matches({"fun:process_batch", "fun:main", "fun:__libc_start_main", "fun:_start"}));  // one frame too many
  CHECK(frames_match_sequence(lines_of({"..."}), {}));  // `...` stands for no frame at all
}

TEST_CASE("frame line patterns match whole names, with * and ? and the escapes of line rules") {
  CHECK(matches({"fun:process_*"}));
  CHECK(matches({"fun:process?batch"}));
  CHECK_FALSE(matches({"fun:process"}));  // a whole name, not a substring
  CHECK(matches({"src:demo_leaks.cu"}));  // a base name matches the file's
  CHECK(matches({"src:/work/examples/demo_leaks.cu:37"}));
  CHECK_FALSE(matches({"src:demo_leaks.cu:38"}));
  CHECK(matches({"fun:process_batch", "src:*.cu:48"}));
  CHECK(matches({"...", "obj:*/libc.so.*"}));
  CHECK_FALSE(matches({"...", "obj:libc"}));
  CHECK(matches_whole_name("operator\\*", "operator*"));
  CHECK_FALSE(matches_whole_name("operator\\*", "operator*="));
  CHECK(matches_whole_name("f\\?", "f?"));
  CHECK_FALSE(matches_whole_name("f\\?", "fx"));
}

TEST_CASE("fun: matches a C++ name with or without its parameters, and its linkage name") {
  // Debug information names the function `process_batch`; the symbol table, with its parameters.
  report::Frame with_parameters = frame("process_batch(float const*, int, int)");
  with_parameters.mangled = "_ZL13process_batchPKfii";
  CHECK(frames_match_sequence(lines_of({"fun:process_batch"}), {with_parameters}));
  CHECK(frames_match_sequence(lines_of({"fun:process_batch(float const\\*, int, int)"}), {with_parameters}));
  CHECK(frames_match_sequence(lines_of({"fun:_ZL13process_batchPKfii"}), {with_parameters}));
  CHECK(frames_match_sequence(lines_of({"fun:ns::Pool::grow"}), {frame("ns::Pool<float>::grow(unsigned long)")}));
  CHECK_FALSE(frames_match_sequence(lines_of({"fun:process_batch"}), {frame("process_batches(int)")}));
}

TEST_CASE("a block that cannot be read is refused with its file and line") {
  const auto refused = [](std::vector<std::pair<int, std::string>> lines) {
    try {
      parse_suppression_block(lines, "t.supp", 7);
    } catch (const std::runtime_error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  CHECK(refused({{8, "name"}, {9, "leak"}}).find("t.supp:7") == 0);
  CHECK(refused({{8, "name"}, {9, "leak"}, {10, "max-hits: 2"}}).find("t.supp:7: the block `name` has no frame line") ==
        0);
  CHECK(refused({{8, "name"}, {9, "leak"}, {10, "frame0:main"}}).find("t.supp:10: `frame0:main` is not a frame line") ==
        0);
  CHECK(refused({{8, "name"}, {9, "leak"}, {10, "max-hits: 0"}, {11, "fun:main"}}).find("t.supp:10") == 0);
  CHECK(refused({{8, "name"}, {9, "leak"}, {10, "max-hits: two"}, {11, "fun:main"}}).find("t.supp:10") == 0);
  CHECK(refused({{8, "name"}, {9, "leak"}, {10, "fun:"}}).find("t.supp:10: `fun:` names nothing") == 0);
}

TEST_CASE("blocks in a suppression file: the kind, a name in the table, and max-hits") {
  Suppressions s;
  s.load_text(
      "# two leaks expected from the vendor's init, no more\n"
      "{\n   vendor-init\n   cuaudit:leak\n   max-hits: 2\n   ...\n   fun:vendor_init\n}\n"
      "{\n   anything at main\n   *\n   fun:main\n}\n",
      "t.supp");
  REQUIRE(s.rules().size() == 2);
  CHECK(s.rules()[0].text() == "leak:{vendor-init}");
  CHECK(s.rules()[0].line == 2);
  CHECK(s.rules()[1].text() == "*:{anything at main}");
  std::vector<report::Finding> findings;
  for (int i = 0; i < 3; ++i) findings.push_back(leak({frame("alloc"), frame("vendor_init"), frame("main")}));
  findings.push_back(leak({frame("main")}));
  s.apply(findings);
  CHECK(findings[0].suppressed);
  CHECK(findings[1].suppressed);
  CHECK_FALSE(findings[2].suppressed);  // past the limit: reported
  CHECK(findings[3].suppressed);
  CHECK(s.rules()[0].hits == 2);
  CHECK(s.rules()[0].past_limit == 1);
  CHECK(s.rules()[0].table_text() == "leak:{vendor-init} (max-hits 2, 1 more reported)");
  CHECK(s.rules()[1].hits == 1);
}

TEST_CASE("a suppression file's block errors name the file and line") {
  const auto refused = [](const std::string& text) {
    Suppressions s;
    try {
      s.load_text(text, "t.supp");
    } catch (const std::runtime_error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  CHECK(refused("leak:x\n{\n  a\n  leak\n  fun:main\n").find("t.supp:2: the block opened here has no closing") == 0);
  CHECK(refused("{\n  a\n  lek\n  fun:main\n}\n").find("t.supp:3: `lek` is not a suppression") == 0);
  CHECK(refused("<?xml version=\"1.0\"?>\n<ComputeSanitizerOutput/>\n")
            .find("t.supp is XML, not a suppression file: compute-sanitizer's records (--xml --save) become rules with "
                  "`cuaudit suppressions import t.supp > FILE.supp`") == 0);
}
