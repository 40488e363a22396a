// The SASS of tests/fixtures/sass-sm90-kernels.cu, disassembled on the H200 (nvcc -arch=sm_90
// -cubin -O3; nvdisasm -json), and what each kernel requires of its pointer parameters.
#include <doctest/doctest.h>

#include <fstream>
#include <sstream>

#include "sass_access.h"

using namespace cuaudit;

namespace {

std::map<std::string, KernelAccess> recorded_kernels() {
  std::ifstream in(CUAUDIT_TEST_FIXTURES "/sass-sm90-kernels.json");
  REQUIRE(in);
  std::stringstream text;
  text << in.rdbuf();
  std::map<std::string, KernelAccess> out;
  for (KernelAccess& k : analyze_sass_json(text.str())) out[k.name] = std::move(k);
  return out;
}

uint32_t required(const KernelAccess& k, uint32_t offset) {
  auto it = k.params.find(offset);
  return it == k.params.end() ? 0 : it->second.required_alignment();
}

}  // namespace

TEST_CASE("a float* cast to float4 inside the kernel requires 16 bytes, from its 128-bit loads and stores") {
  const auto kernels = recorded_kernels();
  const KernelAccess& k = kernels.at("_Z6scale4PKfPfi");
  CHECK(required(k, 0) == 16);
  CHECK(required(k, 8) == 16);
  CHECK(required(k, 16) == 0);  // n: not a pointer
}

TEST_CASE("a double2 stored through a char*, a by-value struct's float4* member, a double*") {
  const auto kernels = recorded_kernels();
  CHECK(required(kernels.at("_Z8store_d2Pci"), 0) == 16);
  const KernelAccess& params = kernels.at("_Z9by_params6Params");
  CHECK(required(params, 0) == 16);  // Params::out, stored 16 bytes at a time
  CHECK(required(params, 8) == 4);   // Params::idx, read as ints
  CHECK(required(kernels.at("plain_c"), 0) == 8);
}

TEST_CASE("a vector access only under a branch on the work size is still required (latent)") {
  const auto kernels = recorded_kernels();
  CHECK(required(kernels.at("_Z7branchyPKfPfi"), 0) == 16);
  CHECK(required(kernels.at("_Z7branchyPKfPfi"), 8) == 16);
}

TEST_CASE("a kernel that tests its pointers' alignment and falls back to scalar code requires nothing") {
  const auto kernels = recorded_kernels();
  const KernelAccess& k = kernels.at("_Z7guardedPKfPfi");
  CHECK(k.params.at(0).guarded);
  CHECK(k.params.at(8).guarded);
  CHECK(required(k, 0) == 0);
  CHECK(required(k, 8) == 0);
}

TEST_CASE("an access at an offset the analysis cannot bound requires nothing, what it can, it says") {
  const auto kernels = recorded_kernels();
  // src = in + off (off a parameter: any multiple of 4), loaded 8 bytes at a time: not the pointer's alone.
  CHECK(required(kernels.at("_Z11offset_loopPKfPfii"), 0) == 0);
  CHECK(required(kernels.at("_Z11offset_loopPKfPfii"), 8) == 8);  // out, a float2 store
  // A struct's own alignment (__align__(16)) is not in the code: `p[i].x += 1` is a 4-byte access.
  CHECK(required(kernels.at("_Z9particlesP8Particlei"), 0) == 4);
}

TEST_CASE("what is not nvdisasm's JSON is refused with a reason") {
  CHECK_THROWS_WITH(analyze_sass_json("{\"x\": 1}"), doctest::Contains("not nvdisasm's JSON"));
  CHECK_THROWS_WITH(analyze_sass_json("garbage"), doctest::Contains("not nvdisasm's JSON"));
}
