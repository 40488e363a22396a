// A cubin's line table read per kernel (tests/fixtures/device-heap-lines.cu, built with -lineinfo
// as its comment says), and a --device-heap run's call places given their source lines from the
// kept cubin, as `cuaudit report` does before the checks.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "cubin_lines.h"
#include "device_heap_lines.h"
#include "fixture_file.h"
#include "run_dir.h"

using namespace cuaudit;

namespace {

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

}  // namespace

TEST_CASE("each kernel's line table is its own sequence, found by the section its relocation names") {
  const auto lines = cubin_lines(fixture("device-heap-lines.cubin"));
  REQUIRE(lines.count("_Z7scratchv") == 1);
  REQUIRE(lines.count("_Z11build_listsi") == 1);
  const std::vector<LineRow>& scratch = lines.at("_Z7scratchv");
  CHECK(ends_with(scratch.front().file, "tests/fixtures/device-heap-lines.cu"));
  CHECK(line_at(scratch, 0x10)->line == 23);  // malloc(32)
  CHECK(line_at(scratch, 0x70)->line == 24);  // free(p)
  CHECK(line_at(scratch, 0x78)->line == 24);  // inside the same row
  CHECK_FALSE(line_at(scratch, 0x180));       // the sequence's end: past the kernel's code
  // The inlined device function's malloc keeps its own line inside the kernel that inlined it.
  const std::vector<LineRow>& build = lines.at("_Z11build_listsi");
  CHECK(line_at(build, 0)->line == 18);
  CHECK(line_at(build, 0x100)->line == 12);
}

TEST_CASE("no line table, or not an ELF object: no lines, no error") {
  CHECK(cubin_lines("").empty());
  CHECK(cubin_lines("\x7f"
                    "ELF....\0malloc\0")
            .empty());
  CHECK_FALSE(line_at({}, 0));
}

TEST_CASE("a damaged cubin reads without a crash: each byte in turn set to 0xff or cut off there") {
  const std::string image = fixture("device-heap-lines.cubin");
  REQUIRE(!image.empty());
  size_t tables = 0;
  for (size_t at = 0; at < image.size(); at += 3) {
    std::string damaged = image;
    damaged[at] = '\xff';
    tables += cubin_lines(damaged).size();
    tables += cubin_lines(std::string_view(image).substr(0, at)).size();
  }
  CHECK(tables > 0);  // most damage leaves the line table readable
}

TEST_CASE("a device-heap run's call places get their source lines from the kept cubin") {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "cuaudit-device-heap-lines";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir / kKernelCodeDir);
  const std::string image = fixture("device-heap-lines.cubin");
  const uint64_t hash = trace::content_hash64(image.data(), image.size());
  std::ofstream(kept_module_code(dir.string(), hash, false), std::ios::binary) << image;

  ProcessTrace trace;
  trace.module_code.push_back({hash, image.size(), 1, trace::ModuleCodeStatus::Saved});
  DeviceHeapLaunchFact launch;
  launch.launch_id = 1;
  launch.function_pc = 0x7f0000010000;
  launch.function_bytes = 0x180;
  launch.name = "_Z7scratchv";
  trace.device_heap_launches[1] = launch;
  trace.device_heap_calls.push_back({1, launch.function_pc + 0x10, 0x9000, 32, trace::DeviceHeapCall::Malloc});
  trace.device_heap_calls.push_back({1, launch.function_pc + 0x70, 0x9000, 0, trace::DeviceHeapCall::Free});
  trace.device_heap_calls.push_back({1, 0x7f0000900000, 0x9100, 8, trace::DeviceHeapCall::Malloc});  // outside

  add_device_heap_lines(dir.string(), trace);
  REQUIRE(trace.device_heap_lines.size() == 2);
  CHECK(ends_with(trace.device_heap_lines.at({"_Z7scratchv", 0x10}), "device-heap-lines.cu:23"));
  CHECK(ends_with(trace.device_heap_lines.at({"_Z7scratchv", 0x70}), "device-heap-lines.cu:24"));
  std::filesystem::remove_all(dir);
}
