// Runs every call pattern, then judges each call site from this executable's own machine code,
// exactly as cuaudit judges a failing CUDA call: checked patterns must be "used", ignored ones
// "discarded"; nothing may be guessed.
#include <link.h>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "call_patterns.h"
#include "fake_api.h"
#include "result_use.h"

namespace {

int first_object(dl_phdr_info* info, size_t, void* out) {
  *static_cast<uint64_t*>(out) = info->dlpi_addr;
  return 1;
}

}  // namespace

int main() {
  cuaudit::ModuleInfo self;
  char path[PATH_MAX];
  if (!realpath("/proc/self/exe", path)) return 2;
  self.path = path;
  dl_iterate_phdr(first_object, &self.load_bias);

  cuaudit::CallSiteJudge judge;
  int passed = 0, failed = 0;
  for (size_t i = 0; i < kCallPatternCount; ++i) {
    const CallPattern& c = kCallPatterns[i];
    c.run();
    std::vector<cuaudit::RawFrame> frames;
    for (size_t f = 0; f < g_frame_count; ++f) frames.push_back({g_frames[f], &self});
    const cuaudit::ResultUse verdict = judge.for_call(frames);
    const cuaudit::ResultUse expected = c.checked ? cuaudit::ResultUse::Used : cuaudit::ResultUse::Discarded;
    const bool ok = verdict == expected;
    std::printf("%s %-62s %s\n", ok ? "PASS" : "FAIL", c.text, cuaudit::result_use_name(verdict));
    (ok ? passed : failed)++;
  }
  std::printf("%d passed, %d failed\n", passed, failed);
  return failed ? 1 : 0;
}
