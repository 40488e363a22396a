// libFuzzer harness: any bytes as a JSON report (what --baseline, diff and merge read). Reading is
// refused with ReportFormatError or gives a model that every renderer can render, the HTML page
// included (the one harness that renders every format: fuzz_run_dir renders text only).
#include <cstddef>
#include <cstdint>

#include <nlohmann/json.hpp>

#include "html_report.h"
#include "json_report.h"
#include "junit_report.h"
#include "sarif_report.h"
#include "text_report.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const nlohmann::json doc = nlohmann::json::parse(data, data + size, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) return 0;
  try {
    const cuaudit::report::Report report = cuaudit::report::report_from_json(doc);
    (void)cuaudit::report::render_json(report);
    (void)cuaudit::report::render_text(report, {});
    (void)cuaudit::report::render_sarif(report, "/src");
    (void)cuaudit::report::render_junit(report);
    (void)cuaudit::report::render_merged_text(report);
    (void)cuaudit::report::render_html(report, "");
  } catch (const cuaudit::report::ReportFormatError&) {
  }
  return 0;
}
