// The HTML report shows source lines around each frame, but only from regular files under the
// source root: a frame's file name comes from a run directory anyone may have written.
#include <doctest/doctest.h>
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "html_report.h"

using namespace cuaudit::report;
namespace fs = std::filesystem;

namespace {

Report leak_with_frames(const std::vector<std::string>& files) {
  Report r;
  r.tool_version = "test";
  Finding f;
  f.kind = FindingKind::Leak;
  f.api = "cudaMalloc";
  for (const std::string& file : files) {
    Frame fr;
    fr.function = "f()";
    fr.file = file;
    fr.line = 2;
    f.stack.push_back(fr);
  }
  r.findings.push_back(f);
  r.summary = summarize(r.findings);
  return r;
}

struct TempTree {
  fs::path base;
  TempTree() {
    char name[] = "/tmp/cuaudit-html-sources-XXXXXX";
    base = mkdtemp(name);
  }
  ~TempTree() { fs::remove_all(base); }
};

}  // namespace

TEST_CASE("HTML source excerpts come only from regular files under the source root") {
  TempTree tree;
  fs::create_directories(tree.base / "project");
  std::ofstream(tree.base / "project" / "app.cu") << "line one\nINSIDE_THE_ROOT\nline three\n";
  std::ofstream(tree.base / "secret.txt") << "x\nOUTSIDE_THE_ROOT\n";
  fs::create_symlink(tree.base / "secret.txt", tree.base / "project" / "link.cu");
  const std::string root = (tree.base / "project").string();
  const Report r = leak_with_frames(
      {root + "/app.cu", (tree.base / "secret.txt").string(), root + "/link.cu", root + "/../secret.txt", "/dev/zero"});

  const std::string page = render_html(r, root);
  CHECK(page.find("INSIDE_THE_ROOT") != std::string::npos);
  CHECK(page.find("OUTSIDE_THE_ROOT") == std::string::npos);  // neither directly, through a link, nor ..

  const std::string without_root = render_html(r, "");
  CHECK(without_root.find("INSIDE_THE_ROOT") == std::string::npos);
}

TEST_CASE("the page's short names are the tool's: one parser of C++ names, no parsing in the page") {
  Report r = leak_with_frames({"/src/pool.cu"});
  r.findings[0].stack[0].function = "Pool::operator()(unsigned long)";
  Frame conversion;
  conversion.function = "Foo::operator bool() const";
  r.findings[0].stack.push_back(conversion);
  const std::string page = render_html(r, "");
  CHECK(page.find(R"x("short_names":{)x") != std::string::npos);
  CHECK(page.find(R"x("Pool::operator()(unsigned long)":"Pool::operator()")x") != std::string::npos);
  CHECK(page.find(R"x("Foo::operator bool() const":"Foo::operator bool")x") != std::string::npos);
}
