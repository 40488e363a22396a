// The process record every trace starts with (injection/process_record.h), read back by the tool.
#include <doctest/doctest.h>

#include <unistd.h>

#include "process_record.h"
#include "recorder_trace.h"

using namespace cuaudit;

TEST_CASE("the process record says who the process is, when it began and its command line") {
  const ProcessTrace t = testing::read_recorder_trace();  // its writer wrote one when it opened
  CHECK(t.pid == static_cast<uint64_t>(getpid()));
  CHECK(t.parent_pid == static_cast<uint64_t>(getppid()));
  CHECK(t.start_monotonic_ns > 0);
  CHECK(t.start_realtime_ns > t.start_monotonic_ns);
  REQUIRE_FALSE(t.command.empty());
  CHECK(t.command[0].find("cuaudit_unit_tests") != std::string::npos);
  CHECK(t.flush_interval_ms == 100);
  CHECK(t.problems.empty());
}
