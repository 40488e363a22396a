#include <doctest/doctest.h>

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "collapsed_report.h"
#include "json_report.h"
#include "junit_report.h"
#include "pool_text.h"
#include "text_helpers.h"
#include "text_report.h"

using namespace cuaudit::report;

namespace {

Report sample() {
  Report r;
  r.tool_version = "0.1.0";
  Process p;
  p.pid = 1234;
  p.command = {"./app", "10"};
  p.exit_code = 0;
  r.processes.push_back(p);
  Finding f;
  f.kind = FindingKind::Leak;
  f.api = "cudaMalloc";
  f.bytes = 409600;
  f.count = 100;
  f.pid = 1234;
  f.device = 0;
  f.headline = "Leak of 409600 byte(s) in 100 allocation(s) (cudaMalloc) allocated from:";
  f.message = "409600 byte(s) of device memory in 100 allocation(s) from cudaMalloc were never released";
  Frame fr;
  fr.pc = 0x401a2b;
  fr.function = "step(int)";
  fr.file = "/src/app.cu";
  fr.line = 6;
  fr.module = "/src/app";
  f.stack = {fr};
  r.findings.push_back(f);
  r.summary = summarize(r.findings);
  return r;
}

}  // namespace

TEST_CASE("text report: LeakSanitizer-style blocks and a SUMMARY line") {
  const std::string text = render_text(sample(), {});
  CHECK(text.find("==1234== Leak of 409600 byte(s) in 100 allocation(s) (cudaMalloc) allocated from:") !=
        std::string::npos);
  CHECK(text.find("#0 0x401a2b in step(int) /src/app.cu:6") != std::string::npos);
  CHECK(text.find("LEAK SUMMARY: 409600 byte(s) leaked in 100 allocation(s) from 1 site(s)") != std::string::npos);
  CHECK(text.find("SUMMARY: cuaudit: 1 error\n") != std::string::npos);
}

TEST_CASE("text report: the summary counts errors, warnings and notes apart") {
  Report r = sample();
  for (int i = 0; i < 13; ++i) {
    Finding info = r.findings.front();
    info.kind = FindingKind::HeldByAllocator;
    info.severity = Severity::Info;
    r.findings.push_back(info);
  }
  Finding warning = r.findings.front();
  warning.kind = FindingKind::AllocationChurn;
  warning.severity = Severity::Warning;
  r.findings.push_back(warning);
  r.summary = summarize(r.findings);
  CHECK(render_text(r, {}).find("SUMMARY: cuaudit: 1 error, 1 warning, 13 notes\n") != std::string::npos);
}

TEST_CASE("text report: --leak-check summary prints totals only") {
  const std::string text = render_text(sample(), {LeakDetail::Summary, 100});
  CHECK(text.find("allocated from:") == std::string::npos);
  CHECK(text.find("LEAK SUMMARY: 409600 byte(s)") != std::string::npos);
}

TEST_CASE("text report: --print-limit withholds the rest and says so") {
  Report r = sample();
  r.findings.push_back(r.findings[0]);
  r.summary = summarize(r.findings);
  const std::string text = render_text(r, {LeakDetail::Full, 1});
  CHECK(text.find("1 more finding(s) not shown (--print-limit 1)") != std::string::npos);
}

TEST_CASE("JSON report keeps the documented names of schema cuaudit.report.v1") {
  const auto doc = nlohmann::json::parse(render_json(sample()));
  CHECK(doc["schema"] == "cuaudit.report.v1");
  CHECK(doc["tool"]["name"] == "cuaudit");
  CHECK(doc["processes"][0]["pid"] == 1234);
  CHECK(doc["processes"][0]["parent_pid"] == 0);
  CHECK(doc["processes"][0]["command"][1] == "10");
  CHECK(doc["processes"][0]["exit_code"] == 0);
  CHECK(doc["processes"][0]["signal"].is_null());
  const auto& f = doc["findings"][0];
  CHECK(f["kind"] == "leak");
  CHECK(f["severity"] == "error");
  CHECK(f["api"] == "cudaMalloc");
  CHECK(f["bytes"] == 409600);
  CHECK(f["count"] == 100);
  CHECK(f["pid"] == 1234);
  CHECK(f["device"] == 0);
  CHECK(f["suppressed"] == false);
  CHECK(f["stack"][0]["function"] == "step(int)");
  CHECK(f["stack"][0]["file"] == "/src/app.cu");
  CHECK(f["stack"][0]["line"] == 6);
  CHECK(f["stack"][0]["module"] == "/src/app");
  CHECK(f["stack"][0]["pc"] == "0x401a2b");
  CHECK(doc["summary"]["leaked_bytes"] == 409600);
  CHECK(doc["summary"]["leaked_allocations"] == 100);
  CHECK(doc["summary"]["findings"] == 1);
}

TEST_CASE("suppressed findings stay in the JSON but do not count") {
  Report r = sample();
  r.findings[0].suppressed = true;
  r.summary = summarize(r.findings);
  CHECK(r.summary.findings == 0);
  CHECK(r.summary.leaked_bytes == 0);
  const auto doc = nlohmann::json::parse(render_json(r));
  CHECK(doc["findings"].size() == 1);
  CHECK(doc["findings"][0]["suppressed"] == true);
}

TEST_CASE("JUnit escapes what comes from the target: kernel names, paths, messages") {
  CHECK(xml_escape("fill<int4>(int4*, int) & \"x\" 'y'") ==
        "fill&lt;int4&gt;(int4*, int) &amp; &quot;x&quot; &apos;y&apos;");
  // XML 1.0 allows no control character but tab, newline and return, not even as a reference.
  CHECK(xml_escape(std::string("a\x01"
                               "b",
                               3)) ==
        "a\xEF\xBF\xBD"
        "b");
  Report r = sample();
  r.findings[0].headline = "Leak in fill<int4> & co";
  const std::string xml = render_junit(r);
  CHECK(xml.find("Leak in fill&lt;int4&gt; &amp; co") != std::string::npos);
  CHECK(xml.find("failures=\"1\"") != std::string::npos);
}

TEST_CASE("JUnit: U+FFFE and U+FFFF, which XML 1.0 excludes, become U+FFFD") {
  CHECK(xml_escape("x\xEF\xBF\xBE y\xEF\xBF\xBF") == "x\xEF\xBF\xBD y\xEF\xBF\xBD");
  CHECK(xml_escape("\xEF\xBF\xBD ok \xE2\x82\xAC") == "\xEF\xBF\xBD ok \xE2\x82\xAC");
}

TEST_CASE("text report: invalid UTF-8, C1 controls and bidi overrides from the target are shown escaped") {
  Report r = sample();
  r.findings[0].stack[0].function = "a\xff b\xC2\x9B[2J c\xE2\x80\xAE d\x1b e caf\xC3\xA9";
  const std::string text = render_text(r, TextOptions{});
  CHECK(text.find("a\\xff b\\u{009b}[2J c\\u{202e} d\\x1b e caf\xC3\xA9") != std::string::npos);
  CHECK(text.find("\xC2\x9B") == std::string::npos);
  CHECK(text.find("\xE2\x80\xAE") == std::string::npos);
}

TEST_CASE("collapsed stacks: no control character and no invalid UTF-8 reaches a line") {
  Report r = sample();
  r.findings[0].stack[0].function = "f\r\v\f\x01g;h i\xff\xC2\x9Bj";
  const std::string out = render_collapsed(r);
  CHECK(out.find("f____g:h_i\xEF\xBF\xBD_j") != std::string::npos);
  for (const char c : out) CHECK((c == '\n' || static_cast<unsigned char>(c) >= 0x20));
}

TEST_CASE("JUnit names stay the same from run to run: no pid, one test case per finding") {
  Report r = sample();
  Finding second = r.findings[0];
  second.stack[0].line = 9;
  r.findings.push_back(second);
  r.summary = summarize(r.findings);
  const std::string first_run = render_junit(r);
  CHECK(first_run.find("1234") == std::string::npos);
  CHECK(first_run.find("<testcase classname=\"cuaudit.app\" name=\"leak cudaMalloc at step(int) (app.cu)\">") !=
        std::string::npos);
  CHECK(first_run.find("name=\"leak cudaMalloc at step(int) (app.cu) #2\"") != std::string::npos);
  CHECK(first_run.find("name=\"no double_free\"") != std::string::npos);  // the checks that passed
  CHECK(first_run.find("failures=\"2\"") != std::string::npos);
  r.processes[0].pid = 99;
  for (Finding& f : r.findings) f.pid = 99;
  CHECK(render_junit(r) == first_run);
  // An edit above the leaks moves their lines: the same test cases (their bodies say the new
  // lines), not two fixed and two new.
  auto case_names = [](const std::string& xml) {
    std::vector<std::string> names;
    for (size_t at = xml.find("<testcase "); at != std::string::npos; at = xml.find("<testcase ", at + 1))
      names.push_back(xml.substr(at, xml.find('>', at) - at));
    return names;
  };
  for (Finding& f : r.findings) f.stack[0].line += 3;
  CHECK(case_names(render_junit(r)) == case_names(first_run));
  CHECK(render_junit(r).find("app.cu:12") != std::string::npos);
}

TEST_CASE("JUnit classnames hold no dot of the program's name (Jenkins reads dots as packages)") {
  Report r = sample();
  r.processes[0].command = {"python3", "train.py"};
  CHECK(render_junit(r).find("classname=\"cuaudit.train_py\"") != std::string::npos);
}

TEST_CASE("text report: a process with several devices names them, and each finding its device") {
  Report r = sample();
  r.processes[0].devices = {{0, "NVIDIA H200", 150109880320ull}, {1, "NVIDIA H200", 150109880320ull}};
  r.findings[0].device = 1;
  const std::string text = render_text(r, {});
  CHECK(text.find("devices: 0 NVIDIA H200 (139.8 GiB), 1 NVIDIA H200 (139.8 GiB)") != std::string::npos);
  CHECK(text.find("on device 1 (NVIDIA H200)") != std::string::npos);
  Report one = sample();  // one device: nothing added
  one.processes[0].devices = {{0, "NVIDIA H200", 150109880320ull}};
  CHECK(render_text(one, {}).find("on device 0") == std::string::npos);
}

TEST_CASE("text from the target in any encoding becomes valid UTF-8, valid characters kept") {
  CHECK(valid_utf8("plain") == "plain");
  CHECK(valid_utf8("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80") == "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80");
  CHECK(valid_utf8("a\xff"
                   "b") ==
        "a\xEF\xBF\xBD"
        "b");                                                                   // a stray byte
  CHECK(valid_utf8("\xc0\xaf") == "\xEF\xBF\xBD\xEF\xBF\xBD");                  // an overlong '/'
  CHECK(valid_utf8("\xed\xa0\x80") == "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");  // a surrogate
  CHECK(valid_utf8("\xe2\x82") == "\xEF\xBF\xBD\xEF\xBF\xBD");                  // cut short
}

TEST_CASE("text report: runs of Python library frames and frames below main are folded, with their count") {
  Report r = sample();
  auto py = [](const std::string& file, const std::string& fn) {
    Frame f;
    f.module = "python";
    f.file = file;
    f.function = fn;
    f.line = 1;
    return f;
  };
  RelatedStack python{RelatedRole::Python, "cudaMalloc", "Python stack:", {}};
  python.stack.push_back(py("/venv/lib/python3.12/site-packages/torch/nn/functional.py", "relu"));
  for (int i = 0; i < 4; ++i) python.stack.push_back(py("/venv/lib/python3.12/site-packages/torch/x.py", "call"));
  python.stack.push_back(py("/home/me/train.py", "<module>"));
  r.findings[0].related.push_back(python);
  Frame libc;
  libc.function = "__libc_start_main";
  Frame start;
  start.function = "_start";
  Frame main_frame;
  main_frame.function = "main";
  r.findings[0].stack.push_back(main_frame);
  r.findings[0].stack.push_back(libc);
  r.findings[0].stack.push_back(libc);
  r.findings[0].stack.push_back(start);

  const std::string folded = render_text(r, {});
  CHECK(folded.find("#0 /venv/lib/python3.12/site-packages/torch/nn/functional.py:1 in relu") != std::string::npos);
  CHECK(folded.find("... 4 more frame(s) in Python libraries (--fold-frames no shows them)") != std::string::npos);
  CHECK(folded.find("#5 /home/me/train.py:1 in <module>") != std::string::npos);
  CHECK(folded.find("... 2 more frame(s) below main") != std::string::npos);
  CHECK(folded.find("in _start") == std::string::npos);

  TextOptions all;
  all.fold_frames = false;
  const std::string unfolded = render_text(r, all);
  CHECK(unfolded.find("more frame(s)") == std::string::npos);
  CHECK(unfolded.find("in _start") != std::string::npos);
}

TEST_CASE("text report: --demangle simple drops parameters and templates, no shows names as linked") {
  Report r = sample();
  r.findings[0].stack[0].function = "void ns::fill<int4>(int4*, int)";
  r.findings[0].stack[0].mangled = "_ZN2ns4fillI4int4EEvPT_i";
  TextOptions simple;
  simple.demangle = Demangle::Simple;
  CHECK(render_text(r, simple).find("in ns::fill /src/app.cu:6") != std::string::npos);
  TextOptions linked;
  linked.demangle = Demangle::None;
  CHECK(render_text(r, linked).find("in _ZN2ns4fillI4int4EEvPT_i /src/app.cu:6") != std::string::npos);
  CHECK(render_text(r, {}).find("in void ns::fill<int4>(int4*, int) /src/app.cu:6") != std::string::npos);
}

TEST_CASE("text report: a segment as a bar of sites and holes, and a line per pool over the run") {
  // 64 KiB: site 0 in the first quarter, a hole, site 1 in the third quarter, a hole.
  SegmentPicture segment{64 * 1024, {{0, 16 * 1024, 0}, {32 * 1024, 16 * 1024, 1}}};
  CHECK(segment_bar(segment) ==
        std::string(16, 'A') + std::string(16, '-') + std::string(16, 'B') + std::string(16, '-'));
  // A block that covers less than half of a column leaves it free; the other sites are '#'.
  SegmentPicture small{64 * 1024, {{0, 256, 0}, {2048, 1024, -1}}};
  CHECK(segment_bar(small) == "--#" + std::string(61, '-'));
  PoolPicture picture;
  picture.sites = {{"MemoryPool.malloc", 16 * 1024, 1, std::nullopt},
                   {"MemoryPool.malloc", 16 * 1024, 1, std::nullopt}};
  picture.segments = {segment};
  const auto lines = picture_lines(picture, [](const Frame&) { return std::string("x"); });
  REQUIRE(lines.size() == 4);
  CHECK(lines[1].find("64.0 KiB") != std::string::npos);
  CHECK(lines[2] == "    A = 16.0 KiB in 1 block(s) (MemoryPool.malloc) (no stack)");

  Timeline timeline;
  timeline.pool_series = {{7,
                           "CuPy's memory pool",
                           {0.5, 1.5},
                           {1 << 20, 2 << 20},
                           {1 << 19, 1 << 20},
                           {1 << 19, 1 << 20},
                           {1 << 19, 1 << 18},
                           {1 << 19, 1 << 20}}};
  const auto pools = pool_series_lines(timeline, 7);
  REQUIRE(pools.size() == 1);
  CHECK(pools[0] ==
        "Pool CuPy's memory pool: reserved up to 2.0 MiB, used up to 1.0 MiB; most fragmented at 1.500 s: "
        "1.0 MiB free in holes, the largest 256.0 KiB (75%)");
  CHECK(pool_series_lines(timeline, 8).empty());
  // A stream-ordered pool, from the samples: reserved against used.
  TimelineSample x;
  x.pid = 8, x.pool_reserved = 8 << 20, x.pool_used = 2 << 20;
  timeline.samples = {x};
  const auto stream_ordered = pool_series_lines(timeline, 8);
  REQUIRE(stream_ordered.size() == 1);
  CHECK(stream_ordered[0] ==
        "Pool CUDA's stream-ordered pool of device 0: reserved up to 8.0 MiB, used up to 2.0 MiB, "
        "reserved but unused up to 6.0 MiB (CUDA tells no largest free block: its fragmentation is "
        "not measured)");
}

TEST_CASE("text report: errors come before warnings and notes, whatever the report's order") {
  Report r = sample();
  Finding note = r.findings.front();
  note.kind = FindingKind::HeldByAllocator;
  note.severity = Severity::Info;
  note.headline = "Held by a framework's cache";
  Finding warning = r.findings.front();
  warning.kind = FindingKind::Fragmentation;
  warning.severity = Severity::Warning;
  warning.headline = "Fragmentation of a pool";
  r.findings.insert(r.findings.begin(), {note, warning});
  TextOptions every_note;
  every_note.show_notes = true;
  const std::string text = render_text(r, every_note);
  const size_t leak = text.find("Leak of"), frag = text.find("Fragmentation of"), held = text.find("Held by");
  REQUIRE(leak != std::string::npos);
  REQUIRE(frag != std::string::npos);
  REQUIRE(held != std::string::npos);
  CHECK(leak < frag);
  CHECK(frag < held);
}

TEST_CASE("text report: notes are one summary line after what gates, each on its own with --show-notes") {
  Report r = sample();
  for (int i = 0; i < 13; ++i) {
    Finding note = r.findings.front();
    note.kind = FindingKind::HeldByAllocator;
    note.severity = Severity::Info;
    note.bytes = 1 << 20;
    note.headline = fmt::format("Held by cache {}", i);
    r.findings.push_back(note);
  }
  Finding handled = r.findings.front();
  handled.kind = FindingKind::ApiError;
  handled.severity = Severity::Info;
  handled.bytes = 0;
  handled.headline = "Handled error: cudaMalloc returned cudaErrorMemoryAllocation";
  r.findings.push_back(handled);
  Finding live = handled;
  live.kind = FindingKind::Live;
  live.headline = "Live: 4.0 MiB still held";
  r.findings.push_back(live);
  const std::string text = render_text(r, {});
  CHECK(text.find("Held by cache") == std::string::npos);
  CHECK(text.find("Handled error") == std::string::npos);
  CHECK(text.find("Live: 4.0 MiB still held") != std::string::npos);  // a snapshot's subject stays
  CHECK(text.find("Notes: 13 held_by_allocator (13.0 MiB), 1 api_error; --show-notes lists them") != std::string::npos);
  CHECK(text.find("Leak of") < text.find("Notes: "));
  TextOptions every_note;
  every_note.show_notes = true;
  const std::string all = render_text(r, every_note);
  CHECK(all.find("Held by cache 12") != std::string::npos);
  CHECK(all.find("Handled error") != std::string::npos);
  CHECK(all.find("Notes: ") == std::string::npos);
}

TEST_CASE("byte sums of received findings saturate instead of wrapping to a small number") {
  Finding a;
  a.kind = FindingKind::Leak, a.severity = Severity::Error, a.bytes = uint64_t{1} << 63, a.count = 1;
  const Summary s = summarize({a, a, a});
  CHECK(s.leaked_bytes == UINT64_MAX);
  CHECK(s.leaked_allocations == 3);
  CHECK(saturating_add(UINT64_MAX - 1, 1) == UINT64_MAX);
  CHECK(saturating_add(2, 3) == 5);
}
