// The one trace the real recorder writes in the unit tests' process (the writer is process-wide),
// opened by whichever test asks first, and read back with the real reader.
#pragma once

#include <doctest/doctest.h>
#include <unistd.h>

#include <string>

#include "process_record.h"
#include "trace_reader.h"
#include "trace_writer.h"

namespace cuaudit::testing {

inline const std::string& recorder_trace_path() {
  static const std::string path = [] {
    char dir[] = "/tmp/cuaudit-unit-XXXXXX";
    REQUIRE(mkdtemp(dir) != nullptr);
    char error[256];
    REQUIRE(inject::trace_writer().open(dir, error, sizeof error));
    inject::write_process_info(100);  // as the injection does first
    return std::string(inject::trace_writer().path());
  }();
  return path;
}

// Everything written so far, as the tool reads it.
inline ProcessTrace read_recorder_trace() {
  recorder_trace_path();
  inject::trace_writer().flush_all();
  return read_trace_file(recorder_trace_path());
}

}  // namespace cuaudit::testing
