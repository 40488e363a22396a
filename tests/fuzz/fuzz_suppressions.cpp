// libFuzzer harness: any bytes as a suppression file. A bad rule is a runtime_error naming its
// line; good rules apply to findings without crashing.
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "suppressions.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  cuaudit::Suppressions rules;
  try {
    rules.load_text(std::string(reinterpret_cast<const char*>(data), size), "fuzz");
  } catch (const std::runtime_error&) {
    return 0;
  }
  cuaudit::report::Finding f;
  f.api = "cudaMalloc";
  cuaudit::report::Frame frame;
  frame.function = "step(int)";
  frame.file = "/src/app.cu";
  frame.module = "/src/app";
  f.stack = {frame};
  std::vector<cuaudit::report::Finding> findings = {f, f};
  findings[1].kind = cuaudit::report::FindingKind::DoubleFree;
  rules.apply(findings);
  (void)cuaudit::suggest_suppression(findings[0]);
  return 0;
}
