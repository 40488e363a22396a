// libFuzzer harness: any bytes as a baseline report, compared with a fixed current report (what
// --baseline and `cuaudit diff` do), and merged with it (`cuaudit merge`).
#include <cstddef>
#include <cstdint>

#include <nlohmann/json.hpp>

#include "baseline.h"
#include "json_report.h"
#include "merge.h"
#include "text_report.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const nlohmann::json doc = nlohmann::json::parse(data, data + size, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) return 0;
  try {
    const cuaudit::report::Report baseline = cuaudit::report::report_from_json(doc);
    cuaudit::report::Report now;
    cuaudit::report::Finding f;
    f.api = "cudaMalloc";
    f.bytes = 4096;
    f.count = 1;
    now.findings = {f};
    cuaudit::apply_baseline("fuzz.json", baseline, now);
    (void)cuaudit::report::render_baseline_diff(now);
    const cuaudit::report::Report merged = cuaudit::merge_reports({baseline, now}, {"a", "b"});
    (void)cuaudit::report::render_json(merged);
  } catch (const cuaudit::report::ReportFormatError&) {
  }
  return 0;
}
