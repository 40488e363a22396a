// The pickle writer's opcodes, byte for byte as CPython's pickletools documents them (Python's own
// reader and the memory visualizer's reader read whole snapshots in tests/reports/check_memory_viz.py).
#include <doctest/doctest.h>

#include <string>

#include "memory_viz_report.h"
#include "pickle_writer.h"

using namespace cuaudit::report;
using namespace std::string_literals;

namespace {

std::string body(const std::string& pickle) { return pickle.substr(2, pickle.size() - 3); }  // less PROTO 4 and STOP

}  // namespace

TEST_CASE("pickle: integers in the fewest bytes of BININT1, BININT or LONG1, the sign kept") {
  const auto one = [](auto write) {
    PickleWriter p;
    write(p);
    const std::string out = p.finish();
    CHECK(out.substr(0, 2) == "\x80\x04"s);
    CHECK(out.back() == '.');
    return body(out);
  };
  CHECK(one([](PickleWriter& p) { p.integer(5); }) == "K\x05"s);
  CHECK(one([](PickleWriter& p) { p.integer(300); }) == "J\x2c\x01\x00\x00"s);
  CHECK(one([](PickleWriter& p) { p.integer(-1); }) == "J\xff\xff\xff\xff"s);
  CHECK(one([](PickleWriter& p) { p.integer(int64_t{1} << 40); }) == "\x8a\x06\x00\x00\x00\x00\x00\x01"s);
  CHECK(one([](PickleWriter& p) { p.integer(int64_t{1} << 31); }) == "\x8a\x05\x00\x00\x00\x80\x00"s);
  CHECK(one([](PickleWriter& p) { p.unsigned_integer(UINT64_MAX); }) ==
        "\x8a\x09\xff\xff\xff\xff\xff\xff\xff\xff\x00"s);
  CHECK(one([](PickleWriter& p) { p.text("\xc3\xa9"); }) == "X\x02\x00\x00\x00\xc3\xa9"s);
  CHECK(one([](PickleWriter& p) {
          p.begin_dict();
          p.key("k");
          p.boolean(true);
          p.end_dict();
        }) == "}(X\x01\x00\x00\x00k\x88u"s);
  CHECK(one([](PickleWriter& p) {
          p.begin_list();
          p.none();
          p.end_list();
          CHECK(p.memoize() == 0);
          p.recall(0);
          p.integer(1);
          p.integer(2);
          p.tuple2();
        }) == "](Ne\x94h\x00K\x01K\x02\x86"s);
}

TEST_CASE("memory viz: a report without a snapshot is an empty one, still a snapshot the viewer opens") {
  const std::string out = render_memory_viz(Report{});
  CHECK(out.substr(0, 2) == "\x80\x04"s);
  CHECK(out.find("device_traces") != std::string::npos);
  CHECK(out.find("segments") != std::string::npos);
  CHECK(out.back() == '.');
}
