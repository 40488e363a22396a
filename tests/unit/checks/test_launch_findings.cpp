#include <doctest/doctest.h>

#include "launch_findings.h"
#include "replay.h"
#include "symbolizer.h"
#include "synthetic_trace.h"
#include "trace_format.h"

using namespace cuaudit;
using cuaudit::testing::SyntheticTrace;

namespace {

constexpr auto kMisaligned = trace::LaunchProblem::Misaligned;
constexpr auto kNotAccessible = trace::LaunchProblem::NotAccessible;
const std::string kWrite4 = "_Z6write4P6float4i";  // write4(float4*, int)

// The trace's launch facts as the reader gives a by-value struct's words (LaunchBits records):
// `place` sets each one's member offset (and buffer offset) from its order, 0 first.
template <typename Place>
ProcessTrace as_words(const SyntheticTrace& t, Place place) {
  ProcessTrace trace = t.trace();
  int n = 0;
  for (Event& e : trace.events) {
    if (e.kind != EventKind::LaunchParam) continue;
    auto& fact = std::get<LaunchParamFact>(e.payload);
    fact.word = true;
    place(fact, n++);
  }
  return trace;
}

std::vector<report::Finding> judge(const ProcessTrace& trace) {
  Symbolizer symbolizer;
  StackResolver stacks(trace, symbolizer);
  return launch_findings(trace, replay(trace).launch_params, stacks);
}

}  // namespace

TEST_CASE("a misaligned float4* is one finding counting its launches, with type, offset and allocation") {
  SyntheticTrace t;
  t.alloc(Api::cudaMalloc, 0x7000, 4096);
  for (int i = 0; i < 3; ++i) t.launch_param(kWrite4, 0, 0x7004, kMisaligned, 16);
  t.end();
  const auto findings = judge(t.trace());
  REQUIRE(findings.size() == 1);
  const report::Finding& f = findings[0];
  CHECK(f.kind == report::FindingKind::MisalignedParam);
  CHECK(f.count == 3);
  CHECK(f.api == "cudaLaunchKernel");
  REQUIRE(f.parameter);
  CHECK(f.parameter->kernel == "write4(float4*, int)");
  CHECK(f.parameter->type == "float4*");
  CHECK(f.parameter->alignment == 16);
  CHECK(f.parameter->offset == 4);
  CHECK(f.headline.find("4 byte(s) into a 4096-byte allocation of device memory (cudaMalloc)") != std::string::npos);
  REQUIRE(f.related.size() == 1);
  CHECK(f.related[0].role == report::RelatedRole::Allocation);
}

TEST_CASE("an inaccessible pointer into freed memory is stale, with allocation and release") {
  SyntheticTrace t;
  t.alloc(Api::cudaMalloc, 0x9000, 1 << 20).release(Api::cudaFree, 0x9000);
  t.launch_param(kWrite4, 0, 0x9400, kNotAccessible, 16);
  t.end();
  const auto findings = judge(t.trace());
  REQUIRE(findings.size() == 1);
  CHECK(findings[0].kind == report::FindingKind::StalePointerParam);
  CHECK(findings[0].parameter->offset == 0x400);
  REQUIRE(findings[0].related.size() == 2);
  CHECK(findings[0].related[0].role == report::RelatedRole::Release);
  CHECK(findings[0].related[1].role == report::RelatedRole::Allocation);
}

TEST_CASE("memory allocated again at a freed address is not stale") {
  SyntheticTrace t;
  t.alloc(Api::cudaMalloc, 0x9000, 4096).release(Api::cudaFree, 0x9000).alloc(Api::cudaMalloc, 0x9000, 4096);
  t.launch_param(kWrite4, 0, 0x9000, kNotAccessible, 16);  // the driver said no: trust the replay
  t.end();
  CHECK(judge(t.trace()).empty());
}

TEST_CASE("readable host memory outside every allocation is a host pointer, unreadable values are nothing") {
  SyntheticTrace t;
  t.launch_param(kWrite4, 0, 0x5555'0000'1000, kNotAccessible, 16, /*host_readable=*/true);
  t.launch_param("plain", 1, 0x1234, kNotAccessible, 0, /*host_readable=*/false);  // an integer of an extern "C" kernel
  t.end();
  const auto findings = judge(t.trace());
  REQUIRE(findings.size() == 1);
  CHECK(findings[0].kind == report::FindingKind::HostPointerParam);
  CHECK_FALSE(findings[0].parameter->offset);
}

TEST_CASE("different parameters, kernels and launch sites are different findings") {
  SyntheticTrace t;
  t.alloc(Api::cudaMalloc, 0x7000, 4096);
  t.launch_param(kWrite4, 0, 0x7004, kMisaligned, 16, false, 3);
  t.launch_param(kWrite4, 0, 0x7004, kMisaligned, 16, false, 4);  // another call site
  t.launch_param("_Z4fillI4int4EvPT_i", 0, 0x7008, kMisaligned, 16, false, 3);
  t.end();
  const auto findings = judge(t.trace());
  REQUIRE(findings.size() == 3);
  CHECK(findings[2].parameter->kernel == "fill<int4>(int4*, int)");
  CHECK(findings[2].parameter->type == "int4*");
}

TEST_CASE("a pointer into another device's memory without peer access names both devices") {
  SyntheticTrace t;
  t.alloc(Api::cudaMalloc, 0x7000'0000, 4096, /*stack=*/1, 0, /*context=*/2, /*device=*/1);
  t.peer_launch_param(kWrite4, 0, 0x7000'0010, /*pointer_device=*/1, /*launch_device=*/0);
  t.peer_launch_param(kWrite4, 0, 0x7000'0010, 1, 0);  // the same launch site again: counted
  const auto findings = judge(t.end().trace());
  REQUIRE(findings.size() == 1);
  const report::Finding& f = findings[0];
  CHECK(f.kind == report::FindingKind::PeerPointerParam);
  CHECK(f.count == 2);
  CHECK(f.device == 0);  // where the kernel runs
  CHECK(f.headline.find("16 byte(s) into a 4096-byte allocation of device memory (cudaMalloc) on device 1") !=
        std::string::npos);
  CHECK(f.headline.find("the kernel runs on device 0") != std::string::npos);
  CHECK(f.notes[0].find("cudaDeviceEnablePeerAccess(1, 0)") != std::string::npos);
  REQUIRE(f.related.size() == 1);
  CHECK(f.related[0].role == report::RelatedRole::Allocation);
}

TEST_CASE("what the kernel's code requires: where it comes from, a struct member, latent or faulted") {
  const std::string kScale4 = "_Z6scale4PKfPfi", kByParams = "_Z9by_params6Params";
  SyntheticTrace t;
  t.alloc(Api::cudaMalloc, 0x7000, 4096);
  t.launch_param(kScale4, 0, 0x7004, kMisaligned, 16, false, 3);    // no work: no fault follows
  t.launch_param(kByParams, 0, 0x7014, kMisaligned, 16, false, 4);  // a float4* inside Params
  t.launch_param(kScale4, 0, 0x7004, kMisaligned, 16, false, 5);    // with work
  ProcessTrace trace = t.trace();
  for (Event& e : trace.events) {
    if (e.kind == EventKind::LaunchParam) std::get<LaunchParamFact>(e.payload).alignment_from = AlignmentSource::Code;
  }
  Event fault;
  fault.kind = EventKind::FailedCall;
  fault.seq = trace.events.back().seq + 1;
  fault.payload = RuntimeCall{4, 716};
  trace.events.push_back(fault);
  const auto findings = judge(trace);
  REQUIRE(findings.size() == 3);
  const report::Finding& latent = findings[0];
  REQUIRE(latent.parameter);
  CHECK(latent.parameter->alignment_from == "code");
  CHECK(latent.headline.find("parameter 0 (float const*) of scale4(float const*, float*, int) is 0x7004, 4 byte(s) "
                             "into a 4096-byte allocation") != std::string::npos);
  CHECK(latent.headline.find("not 16-byte aligned, and the kernel's code accesses 16 bytes at a time") !=
        std::string::npos);
  CHECK(latent.message.find("a 128-bit access") != std::string::npos);
  CHECK(latent.notes[0].find("latent") != std::string::npos);
  CHECK(findings[1].headline.find("the 8 bytes at offset 0 of parameter 0 (Params)") != std::string::npos);
  CHECK(findings[1].notes[0].find("latent") != std::string::npos);  // a later misaligned launch came between
  CHECK(findings[2].notes[0].find("this launch faulted") != std::string::npos);
}

TEST_CASE("a pointer misaligned for the type the program declared names the type") {
  static const std::string kParticle = "Particle";
  SyntheticTrace t;
  t.alloc(Api::cudaMalloc, 0x7000, 4096);
  t.launch_param("_Z9particlesP8Particlei", 0, 0x7004, kMisaligned, 16, false, 3);
  t.end();
  ProcessTrace trace = t.trace();
  for (Event& e : trace.events) {
    if (e.kind != EventKind::LaunchParam) continue;
    auto& fact = std::get<LaunchParamFact>(e.payload);
    fact.alignment_from = AlignmentSource::DebugInfo;
    fact.declared_type = &kParticle;
  }
  const auto findings = judge(trace);
  REQUIRE(findings.size() == 1);
  CHECK(findings[0].headline.find("not 16-byte aligned as Particle is declared (the program's debug information)") !=
        std::string::npos);
  CHECK(findings[0].message.find("Particle is declared with 16-byte alignment") == 0);
  CHECK(findings[0].notes[0].find("whole Particles") != std::string::npos);
  CHECK(findings[0].parameter->alignment_from == "debug_info");
}

TEST_CASE("a word of a by-value struct is stale only where it lies in released memory") {
  const std::string kByParams = "_Z9by_params6Params";
  SyntheticTrace t;
  t.alloc(Api::cudaMalloc, 0x9000, 4096).release(Api::cudaFree, 0x9000);
  t.alloc(Api::cudaMalloc, 0x20000, 4096);
  t.launch_param(kByParams, 0, 0x9010, kNotAccessible, 0, false, 3);  // Params.idx, freed
  t.launch_param(kByParams, 0, 0x9010, kNotAccessible, 0, false, 3);
  t.launch_param(kByParams, 0, 0x40000, kNotAccessible, 0, true, 3);  // an integer, or host memory: unknown
  t.end();
  int words = 0;
  const ProcessTrace trace = as_words(t, [&](LaunchParamFact& fact, int) {
    fact.member_offset = fact.buffer_offset = 8;
    ++words;
  });
  REQUIRE(words == 3);
  const auto findings = judge(trace);
  REQUIRE(findings.size() == 1);
  const report::Finding& f = findings[0];
  CHECK(f.kind == report::FindingKind::StalePointerParam);
  CHECK(f.count == 2);
  REQUIRE(f.parameter);
  CHECK(f.parameter->member_offset == 8);
  CHECK(f.parameter->offset == 0x10);
  CHECK(f.headline.find("the 8 bytes at offset 8 of parameter 0 (Params) of by_params(Params) is 0x9010, 16 byte(s) "
                        "into a 4096-byte allocation of device memory (cudaMalloc) already released by cudaFree") !=
        std::string::npos);
  REQUIRE(f.notes.size() == 1);
  CHECK(f.notes[0].find("does not say these 8 bytes are a pointer") != std::string::npos);
  CHECK(f.related.size() == 2);
}

TEST_CASE(
    "a word of a by-value struct in host memory is a host pointer only where the kernel's code reads through it") {
  const std::string kByParams = "_Z9by_params6Params";
  SyntheticTrace t;
  t.launch_param(kByParams, 0, 0x5555'0000'1000, kNotAccessible, 0, /*host_readable=*/true, 3);  // Params.idx
  t.launch_param(kByParams, 0, 0x5555'0000'2000, kNotAccessible, 0, /*host_readable=*/true, 3);  // Params.label
  t.end();
  const ProcessTrace trace = as_words(t, [](LaunchParamFact& fact, int n) {
    fact.member_offset = fact.buffer_offset = n == 0 ? 8 : 16;
    fact.code_dereferences = n == 0;  // what the analysis found in the kernel's code
  });
  const auto findings = judge(trace);
  REQUIRE(findings.size() == 1);
  const report::Finding& f = findings[0];
  CHECK(f.kind == report::FindingKind::HostPointerParam);
  CHECK(f.parameter->member_offset == 8);
  CHECK(f.headline.find("the 8 bytes at offset 8 of parameter 0 (Params) of by_params(Params) is 0x555500001000, "
                        "pageable host memory") != std::string::npos);
  REQUIRE(f.notes.size() == 2);
  CHECK(f.notes[0].find("its machine code loads or stores through them") != std::string::npos);
}
