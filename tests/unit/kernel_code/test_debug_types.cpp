// The host program's debug information: what tests/fixtures/debug-types-kernels.cu declares of
// its kernels' pointer parameters, read from the program nvcc -g built from it.
#include <doctest/doctest.h>

#include <unistd.h>

#include <fstream>

#include "debug_types.h"
#include "kernel_access.h"
#include "run_dir.h"

using namespace cuaudit;

namespace {

// What the reader gives the judgement for a launch of kernel 1 with `value` in parameter 0.
Event low_bits_launch(uint64_t value, uint64_t stack_id) {
  LaunchParamFact fact;
  fact.kernel_id = 1;
  fact.value = value;
  fact.problem = trace::LaunchProblem::LowBits;
  Event e;
  e.kind = EventKind::LaunchParam;
  e.stack_id = stack_id;
  e.payload = fact;
  return e;
}

}  // namespace

#ifdef CUAUDIT_DEBUG_TYPES_FIXTURE
TEST_CASE("a pointer to a user struct declared __align__(16) or alignas(32) has that alignment") {
  const auto particles = declared_pointers(CUAUDIT_DEBUG_TYPES_FIXTURE, "_Z9particlesP8Particlei");
  REQUIRE(particles);
  REQUIRE(particles->count(declared_key(0, 0)));
  CHECK(particles->at(declared_key(0, 0)).alignment == 16);
  CHECK(particles->at(declared_key(0, 0)).pointee == "Particle");
  CHECK(particles->size() == 1);  // n is no pointer
  // Through a typedef, const and __restrict__ to the struct.
  const auto wide = declared_pointers(CUAUDIT_DEBUG_TYPES_FIXTURE, "_Z4wideP4WidePK8Particlei");
  REQUIRE(wide);
  CHECK(wide->at(declared_key(0, 0)).alignment == 32);
  CHECK(wide->at(declared_key(1, 0)).alignment == 16);
  // A kernel in a namespace.
  const auto step = declared_pointers(CUAUDIT_DEBUG_TYPES_FIXTURE, "_ZN7physics4stepEP8Particlei");
  REQUIRE(step);
  CHECK(step->at(declared_key(0, 0)).alignment == 16);
}

TEST_CASE("the pointers inside a by-value struct, nested ones too, at their offsets") {
  const auto params = declared_pointers(CUAUDIT_DEBUG_TYPES_FIXTURE, "_Z9by_params6Params");
  REQUIRE(params);
  CHECK(params->at(declared_key(0, 0)).alignment == 16);  // float4* out: CUDA declares float4 16-aligned
  CHECK(params->at(declared_key(0, 0)).pointee == "float4");
  CHECK(params->at(declared_key(0, 8)).alignment == 0);    // const int*: nothing declared
  CHECK(params->at(declared_key(0, 16)).alignment == 16);  // Particle* ps
  CHECK(params->at(declared_key(0, 24)).alignment == 32);  // inner.wide
  CHECK(params->size() == 4);
}

TEST_CASE("a launch 4 bytes into Particles: misaligned as Particle is declared, though the code reads 4 bytes") {
  char dir[] = "/tmp/cuaudit-declared-XXXXXX";
  REQUIRE(mkdtemp(dir) != nullptr);
  // The launch's stack runs through the program; the kernel's code (cached) reads floats only.
  ProcessTrace trace;
  trace.modules.push_back({0, 0x1000, 0x2000, CUAUDIT_DEBUG_TYPES_FIXTURE, ""});
  trace.stacks[7] = {0x1500};
  trace.kernels[1] = "_Z9particlesP8Particlei";
  const std::string cache = std::string(dir) + "/" + kKernelAccessCacheFile;
  std::ofstream(cache) << R"({"schema": "cuaudit.kernel-access.v1", "kernels": {
    "_Z9particlesP8Particlei": {"cubin": "0", "params": {"0": {"width": 4, "guarded": false}}}}})";
  std::string error;
  {
    KernelRequirements judge(dir, "/nonexistent/nvdisasm");
    REQUIRE(judge.load_cache(cache, error));
    const auto judged = judge.judge(trace, low_bits_launch(0x7f0000000004, 7));
    REQUIRE(judged);
    CHECK(judged->alignment == 16);
    CHECK(judged->alignment_from == AlignmentSource::DebugInfo);
    REQUIRE(judged->declared_type);
    CHECK(*judged->declared_type == "Particle");
    CHECK_FALSE(judge.judge(trace, low_bits_launch(0x7f0000000010, 7)));  // a whole Particle in
    CHECK(judge.notes().empty());
    REQUIRE(judge.save_cache(cache, error));
  }
  // Elsewhere, without the program: the cache says what it declared.
  trace.modules[0].path = "/nonexistent/program";
  KernelRequirements again(dir, "/nonexistent/nvdisasm");
  REQUIRE(again.load_cache(cache, error));
  const auto judged = again.judge(trace, low_bits_launch(0x7f0000000008, 7));
  REQUIRE(judged);
  CHECK(judged->alignment_from == AlignmentSource::DebugInfo);
}
#endif

TEST_CASE("without debug information for a kernel, the report says so once") {
  char dir[] = "/tmp/cuaudit-declared-XXXXXX";
  REQUIRE(mkdtemp(dir) != nullptr);
  ProcessTrace trace;
  trace.kernels[1] = "_Z9particlesP8Particlei";
  KernelRequirements judge(dir, "/nonexistent/nvdisasm");
  CHECK_FALSE(judge.judge(trace, low_bits_launch(0x7f0000000004, 0)));
  CHECK_FALSE(judge.judge(trace, low_bits_launch(0x7f0000000004, 0)));
  bool said = false;
  for (const std::string& note : judge.notes())
    said |= note.find("no debug information describes 1 kernel(s)") == 0 && note.find("-g") != std::string::npos;
  CHECK(said);
}

TEST_CASE("an object without the kernel or without debug information declares nothing") {
#ifdef CUAUDIT_DEBUG_TYPES_FIXTURE
  CHECK_FALSE(declared_pointers(CUAUDIT_DEBUG_TYPES_FIXTURE, "_Z7missingv"));
#endif
  CHECK_FALSE(declared_pointers(CUAUDIT_TEST_FIXTURES "/sass-sm90-kernels.json", "_Z9particlesP8Particlei"));
  CHECK_FALSE(declared_pointers("/nonexistent", "_Z9particlesP8Particlei"));
}
