// libFuzzer harness: any bytes as a whole run directory (several traces, run.json, the caches, a
// PyTorch blocks file), as `cuaudit report DIR` reads one received from elsewhere. The input is
// cut at each "\n--cuaudit-file--\n" into the directory's files, in the order of kFiles; the
// analysis must never crash, hang or touch memory it should not. A refused directory is a
// std::runtime_error with a message. The report is rendered as text only: fuzz_report_json renders
// every format from any report model, and rendering them here took a third of each input's time
// (a million inputs needed some 7 hours; docs/TESTING.md).
#include <stdlib.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <fstream>
#include <string>
#include <string_view>

#include "analysis.h"
#include "run_dir.h"
#include "text_report.h"

namespace {

constexpr std::string_view kSeparator = "\n--cuaudit-file--\n";
// The files a run directory holds, in the order the input gives them (pid 1 and 2: a parent and a
// child, or one process's trace and a copy of it). The small files come first and the traces last:
// fuzz.sh caps this harness's inputs at 64 KiB (an analysis costs time in proportion to its bytes:
// 72 inputs a second at 256 KiB, 145 at 64 KiB), and a cap then cuts a trace's tail, which is a
// case worth reading, instead of every file after a long trace.
constexpr const char* kFiles[] = {"run.json",           "symbols.json",        "call_sites.json",
                                  "kernel-access.json", "torch-blocks-1.json", "python-hooks-1.json",
                                  "trace-1.cutrace",    "trace-2.cutrace"};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // In memory where the machine has a tmpfs: each input writes and removes a whole directory.
  static const std::string base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
  std::string pattern = base + "/cuaudit-fuzz-run-XXXXXX";
  if (!mkdtemp(pattern.data())) return 0;
  const std::string dir = pattern.c_str();
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  size_t start = 0;
  for (const char* name : kFiles) {
    if (start > input.size()) break;
    const size_t end = std::min(input.find(kSeparator, start), input.size());
    std::ofstream(dir + "/" + name, std::ios::binary)
        .write(input.data() + start, static_cast<std::streamsize>(end - start));
    start = end + kSeparator.size();
  }
  try {
    cuaudit::AnalysisOptions options;
    const cuaudit::report::Report report = cuaudit::analyze_run_dir(dir, options);
    (void)cuaudit::report::render_text(report, cuaudit::report::TextOptions{});
  } catch (const std::runtime_error&) {
  }
  cuaudit::remove_run_dir(dir);
  return 0;
}
