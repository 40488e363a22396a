// libFuzzer harness: any bytes as a trace file. Reading, replaying and judging must never crash,
// hang or touch memory they should not; a refused file is a TraceError.
#include <cstddef>
#include <cstdint>
#include <string>

#include "replay.h"
#include "trace_reader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const cuaudit::ProcessTrace trace =
        cuaudit::parse_trace(std::string(reinterpret_cast<const char*>(data), size), "fuzz");
    (void)cuaudit::replay(trace);
  } catch (const cuaudit::TraceError&) {
  }
  return 0;
}
