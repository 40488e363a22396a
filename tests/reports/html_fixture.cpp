// Writes HTML reports for the browser test that no recorded run provides: N findings (to check
// that the page stays responsive), including names a hostile or unlucky program could produce.
// Usage: html_fixture N FILE
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

#include "html_report.h"

using namespace cuaudit::report;

int main(int argc, char** argv) {
  if (argc != 3) return 2;
  const int n = std::atoi(argv[1]);
  Report r;
  r.tool_version = "test";
  Process p;
  p.pid = 7;
  p.command = {"./app", "</script><script>window.__pwned = 1</script>"};
  p.exit_code = 0;
  r.processes.push_back(p);
  for (int i = 0; i < n; ++i) {
    Finding f;
    f.kind = i % 3 == 0 ? "leak" : i % 3 == 1 ? "double_free" : "unchecked_error";
    f.severity = Severity::Error;
    f.api = "cudaMalloc";
    f.bytes = static_cast<uint64_t>(1000 + i);
    f.count = 1;
    f.pid = 7;
    f.message = i == 0 ? "<img src=x onerror=\"window.__pwned = 2\"> in fill<int4>" : "finding " + std::to_string(i);
    Frame fr;
    fr.pc = 0x1000 + static_cast<uint64_t>(i);
    fr.function = i == 0 ? "fill<int4>(int4*, int)</td><script>window.__pwned = 3</script>" : "site_" + std::to_string(i);
    fr.file = "/src/app.cu";
    fr.line = 10 + i % 50;
    f.stack = {fr};
    r.findings.push_back(f);
  }
  r.summary = summarize(r.findings);
  std::ofstream(argv[2]) << render_html(r);
  return 0;
}
