#include <doctest/doctest.h>

#include <unistd.h>
#include <cstdio>

#include <fstream>

#include "suppressions.h"
#include "text_helpers.h"

using namespace cuaudit;

namespace {

report::Finding finding(std::string kind, std::string function, std::string file, uint64_t bytes = 100) {
  report::Finding f;
  f.kind = report::finding_kind_from_key(kind).value_or(report::FindingKind::Leak);
  f.bytes = bytes;
  report::Frame fr;
  fr.function = std::move(function);
  fr.file = std::move(file);
  fr.module = "/opt/app/bin/app";
  f.stack = {fr};
  return f;
}

std::string write_file(const std::string& text) {
  char path[] = "/tmp/cuaudit-supp-XXXXXX";
  const int fd = mkstemp(path);
  REQUIRE(fd >= 0);
  close(fd);
  std::ofstream(path) << text;
  return path;
}

}  // namespace

TEST_CASE("patterns follow LeakSanitizer: substring, * wildcard, ^ and $ anchors") {
  CHECK(matches_suppression_pattern("CachingAllocator", "c10::cuda::CUDACachingAllocator::malloc"));
  CHECK(matches_suppression_pattern("c10::*::malloc", "c10::cuda::CUDACachingAllocator::malloc"));
  CHECK(matches_suppression_pattern("^c10::", "c10::cuda::x"));
  CHECK_FALSE(matches_suppression_pattern("^cuda::", "c10::cuda::x"));
  CHECK(matches_suppression_pattern("::x$", "c10::cuda::x"));
  CHECK_FALSE(matches_suppression_pattern("::x$", "c10::cuda::xy"));
  CHECK(matches_suppression_pattern("^step(int)$", "step(int)"));
  CHECK_FALSE(matches_suppression_pattern("^step$", "step(int)"));
  CHECK(matches_suppression_pattern("app.cu", "/src/app.cu"));
  CHECK_FALSE(matches_suppression_pattern("", "anything"));
}

TEST_CASE("a rule suppresses exactly what it names, counting hits and bytes") {
  Suppressions s;
  s.load_file(
      write_file("# third-party code we cannot fix\nleak:vendor_init\n*:^legacy/\nmismatched_free:nothing_here\n"));
  std::vector<report::Finding> findings = {
      finding("leak", "vendor_init()", "vendor.cu", 64), finding("leak", "step(int)", "app.cu", 32),
      finding("double_free", "f()", "legacy/old.cu", 8), finding("double_free", "vendor_init()", "vendor.cu", 16)};
  s.apply(findings);
  CHECK(findings[0].suppressed);
  CHECK_FALSE(findings[1].suppressed);
  CHECK(findings[2].suppressed);        // *: any kind, by file
  CHECK_FALSE(findings[3].suppressed);  // leak: rules do not touch other kinds
  REQUIRE(s.rules().size() == 3);
  CHECK(s.rules()[0].hits == 1);
  CHECK(s.rules()[0].bytes == 64);
  CHECK(s.rules()[0].line == 2);
  CHECK(s.rules()[1].hits == 1);
  CHECK(s.rules()[2].hits == 0);
  const auto summary = report::summarize(findings);
  CHECK(summary.findings == 2);
}

TEST_CASE("related stacks count: a double free is matched by its allocation site too") {
  Suppressions s;
  s.add({report::FindingKind::DoubleFree, "pool_alloc", "", "inline", 1});
  report::Finding f = finding("double_free", "release()", "a.cu");
  f.related.push_back({report::RelatedRole::Allocation, "cudaMalloc",
                       "allocated by cudaMalloc at:", finding("x", "pool_alloc()", "p.cu").stack});
  std::vector<report::Finding> findings = {f};
  s.apply(findings);
  CHECK(findings[0].suppressed);
}

TEST_CASE("a bad rule is refused with its file and line") {
  Suppressions s;
  const std::string path = write_file("leak:ok\n\nlek:typo\n");
  const std::string where = path + ":3";
  CHECK_THROWS_WITH(s.load_file(path), doctest::Contains(where.c_str()));
  CHECK_THROWS_WITH(Suppressions().load_file("/nonexistent.supp"), doctest::Contains("cannot read"));
}

TEST_CASE("a generated rule suppresses the finding it was generated from") {
  report::Finding f = finding("leak", "process_batch(float const*, int, int)", "demo.cu");
  Suppressions s;
  const std::string rule = suggest_suppression(f);
  CHECK(rule == "leak:^process_batch(float const\\*, int, int)$");
  s.add({report::FindingKind::Leak, rule.substr(5), "", "generated", 1});
  std::vector<report::Finding> findings = {f, finding("leak", "process_batch_other()", "demo.cu")};
  s.apply(findings);
  CHECK(findings[0].suppressed);
  CHECK_FALSE(findings[1].suppressed);
}

TEST_CASE("a generated rule is no broader than its finding: `*`, `#` and `\\` in names are escaped") {
  for (const char* name : {"Matrix::operator*(Matrix const&)", "upload#v2", "path\\to", "^odd$", "x*"}) {
    CAPTURE(name);
    const report::Finding f = finding("leak", name, "demo.cu");
    const std::string rule = suggest_suppression(f);
    Suppressions s;
    s.load_text(rule + "  # a comment after the rule\n", "generated");
    std::string longer = std::string(name) + "_more";
    std::vector<report::Finding> findings = {f, finding("leak", longer, "demo.cu"),
                                             finding("leak", "Matrix::operator", "demo.cu")};
    s.apply(findings);
    CHECK(findings[0].suppressed);
    CHECK_FALSE(findings[1].suppressed);
    CHECK_FALSE(findings[2].suppressed);
  }
  CHECK(matches_suppression_pattern("a\\*b", "a*b"));
  CHECK_FALSE(matches_suppression_pattern("a\\*b", "axxb"));
  CHECK(matches_suppression_pattern("a*b", "axxb"));
}

TEST_CASE("a generated rule for a name with control, bidi or C1 characters matches it, as the text report prints it") {
  // The review's names (2026-12-04, F14): a tab, a bidi override, a C1 control, a newline, a byte of
  // invalid UTF-8. The rule is printable (the escapes the text report shows) and matches the name.
  for (const std::string& name : {std::string("tab\tx"), std::string("a\u202eb"), std::string("c\u0085d"),
                                  std::string("two\nlines"), std::string("bad\xff") + "byte", std::string("plain")}) {
    CAPTURE(name);
    const std::string rule = suggest_suppression(finding("leak", name, "demo.cu"));
    CHECK(report::visible(rule) == rule);  // what the text report prints is the rule itself
    Suppressions s;
    s.load_text(rule + "\n", "pasted");
    std::vector<report::Finding> findings = {finding("leak", name, "demo.cu"), finding("leak", name + "2", "demo.cu")};
    s.apply(findings);
    CHECK(findings[0].suppressed);
    CHECK_FALSE(findings[1].suppressed);
  }
  CHECK(suggest_suppression(finding("leak", "tab\tx", "demo.cu")) == "leak:^tab\\x09x$");
  CHECK(suggest_suppression(finding("leak", "a\u202eb", "demo.cu")) == "leak:^a\\u{202e}b$");
  // The escapes in hand-written rules too; a backslash before anything else still makes it literal.
  CHECK(matches_suppression_pattern("^a\\u{e9}$", "a\u00e9"));
  CHECK(matches_suppression_pattern("\\x41\\n", "A\n"));
  CHECK(matches_suppression_pattern("^\\q$", "q"));
  CHECK(matches_suppression_pattern("^\\x4$", "x4"));  // not two hex digits: a literal x
  CHECK(matches_suppression_pattern("^\\u{zz}$", "u{zz}"));
}
