// What the injection says to the user reaches the report's notes: the real writer, the real reader.
#include <doctest/doctest.h>

#include <algorithm>

#include "notice_writer.h"
#include "recorder_trace.h"

using namespace cuaudit;

TEST_CASE("a notice the injection writes is among the process's notes, cut at 1,024 bytes") {
  testing::recorder_trace_path();
  inject::write_notice(trace::NoticeCode::UnifiedMemoryUnavailable, "no unified-memory records on this host");
  const std::string long_text(3000, 'x');
  inject::write_notice(trace::NoticeCode::UnifiedMemoryUnavailable, long_text.c_str());
  const ProcessTrace t = testing::read_recorder_trace();
  CHECK(std::count(t.notices.begin(), t.notices.end(), "no unified-memory records on this host") == 1);
  CHECK(std::count(t.notices.begin(), t.notices.end(), std::string(1024, 'x')) == 1);
}
