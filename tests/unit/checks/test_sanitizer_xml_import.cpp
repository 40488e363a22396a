#include <doctest/doctest.h>

#include <stdexcept>

#include "sanitizer_xml_import.h"
#include "suppressions.h"

using namespace cuaudit;

namespace {

// The shape compute-sanitizer --xml yes --save writes: <record>s of a kind, a level, what happened
// and the host stack, driver frames first.
const char* kXml = R"(<?xml version="1.0" encoding="UTF-8"?>
<ComputeSanitizerOutput>
  <record>
    <kind>Leak</kind>
    <level>Error</level>
    <what><text>Leaked 327680 bytes at 0x7f1c2a000000</text><size>327680</size></what>
    <hostStack>
      <frame><func>cuMemAlloc_v2</func><module>/lib/x86_64-linux-gnu/libcuda.so.1</module></frame>
      <frame><func>cudaMalloc</func><module>/work/bin/demo_leaks</module></frame>
      <frame><func>_ZL13process_batchPKfii</func><module>/work/bin/demo_leaks</module></frame>
      <frame><func>main</func><module>/work/bin/demo_leaks</module></frame>
      <frame><func>__libc_start_main</func><module>/lib/x86_64-linux-gnu/libc.so.6</module></frame>
    </hostStack>
  </record>
  <record>
    <kind>Api</kind>
    <level>Error</level>
    <what><text>Program hit cudaErrorInvalidValue (error 1) due to "invalid argument" on CUDA API call to cudaFree.</text></what>
    <hostStack>
      <frame><func>cudaFree</func><module>/usr/local/cuda/lib64/libcudart.so.13</module></frame>
      <frame><func>release&lt;float&gt;(float*)</func><module>/work/bin/app</module></frame>
      <frame><func></func><module>/work/bin/app</module></frame>
      <frame><func>main</func><module>/work/bin/app</module></frame>
    </hostStack>
  </record>
  <record>
    <kind>Precise</kind>
    <level>Error</level>
    <what><text>Invalid __global__ write of size 4 bytes</text></what>
    <where><func>fill(float*)</func><line>12</line></where>
    <hostStack><frame><func>main</func><module>/work/bin/app</module></frame></hostStack>
  </record>
  <record>
    <kind>Precise</kind>
    <level>Error</level>
    <what><text>Invalid __global__ read of size 16 bytes: address 0x7f00 is misaligned</text></what>
    <hostStack>
      <frame><func>cudaLaunchKernel</func><module>/usr/local/cuda/lib64/libcudart.so.13</module></frame>
      <frame><func>main</func><module>/work/bin/app</module></frame>
    </hostStack>
  </record>
  <record>
    <kind>Leak</kind>
    <what><text>Leaked 64 bytes at 0x7f1c2a100000</text></what>
    <hostStack><frame><func>cuMemAlloc_v2</func><module>/lib/x86_64-linux-gnu/libcuda.so.1</module></frame></hostStack>
  </record>
</ComputeSanitizerOutput>
)";

report::Finding finding(report::FindingKind kind, std::vector<std::string> functions) {
  report::Finding f;
  f.kind = kind;
  f.bytes = 64;
  for (std::string& name : functions) {
    report::Frame fr;
    fr.function = std::move(name);
    fr.module = "/work/bin/app";
    f.stack.push_back(std::move(fr));
  }
  return f;
}

}  // namespace

TEST_CASE("compute-sanitizer's records are read with their kind, text and host stack") {
  const std::vector<SanitizerRecord> records = read_sanitizer_xml(kXml);
  REQUIRE(records.size() == 5);
  CHECK(records[0].kind == "Leak");
  CHECK(records[0].level == "Error");
  CHECK(records[0].what == "Leaked 327680 bytes at 0x7f1c2a000000");
  REQUIRE(records[0].host_stack.size() == 5);
  CHECK(records[0].host_stack[1].function == "cudaMalloc");
  CHECK(records[0].host_stack[0].module == "/lib/x86_64-linux-gnu/libcuda.so.1");
  CHECK(records[1].host_stack[1].function == "release<float>(float*)");  // entities read
  CHECK(records[2].host_stack.size() == 1);                              // <where> is the device's, not a frame
}

TEST_CASE("leaks and failing calls become blocks of the program's frames, device errors comments") {
  const SanitizerImport imported = suppressions_from_sanitizer(read_sanitizer_xml(kXml), "/ci/cs.xml");
  CHECK(imported.blocks == 3);
  CHECK(imported.without_rule == 2);
  const std::string& rules = imported.rules;
  // From the first frame outside CUDA's libraries down to main, by their short names.
  CHECK(rules.find("{\n   cs.xml record 1\n   leak\n   fun:process_batch\n   fun:main\n}\n") != std::string::npos);
  // A frame without a name is the module's; any kind at a failing call's stack.
  CHECK(rules.find("{\n   cs.xml record 2\n   *\n   fun:release\n   obj:/work/bin/app\n   fun:main\n}\n") !=
        std::string::npos);
  CHECK(rules.find("{\n   cs.xml record 4\n   misaligned_param\n   fun:main\n}\n") != std::string::npos);
  CHECK(rules.find("# record 3 (Precise: Invalid __global__ write of size 4 bytes): no rule, a device-side error") !=
        std::string::npos);
  CHECK(rules.find("# record 5 (Leak: Leaked 64 bytes at 0x7f1c2a100000): no rule, its host stack has no frame") !=
        std::string::npos);

  // The rules, read back, suppress cuaudit's findings at the same stacks and nothing else.
  Suppressions s;
  s.load_text(rules, "cs.supp");
  REQUIRE(s.rules().size() == 3);
  std::vector<report::Finding> findings = {
      finding(report::FindingKind::Leak, {"process_batch(float const*, int, int)", "main"}),
      finding(report::FindingKind::Leak, {"upload", "main"}),
      finding(report::FindingKind::UncheckedError, {"release<float>(float*)", "", "main"}),
      finding(report::FindingKind::Leak, {"main"})};
  findings[2].stack[1].function.clear();
  s.apply(findings);
  CHECK(findings[0].suppressed);
  CHECK_FALSE(findings[1].suppressed);
  CHECK(findings[2].suppressed);
  CHECK_FALSE(findings[3].suppressed);  // the misaligned record's rule is for misaligned parameters
}

TEST_CASE("a file that is not compute-sanitizer's XML is refused with what to do") {
  const auto refused = [](const std::string& xml) {
    try {
      read_sanitizer_xml(xml);
    } catch (const std::runtime_error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  CHECK(refused("leak:main\n").find("not well-formed XML") == 0);
  CHECK(refused("<ComputeSanitizerOutput><record>").find("not well-formed XML") == 0);
  CHECK(refused("<?xml version=\"1.0\"?><testsuites/>").find("not compute-sanitizer's XML") == 0);
  CHECK(refused("").find("not well-formed XML") == 0);
  CHECK(read_sanitizer_xml("<ComputeSanitizerOutput/>").empty());
}
