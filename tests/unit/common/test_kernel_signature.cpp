#include <doctest/doctest.h>

#include <cstdlib>
#include <string>

#include "kernel_signature.h"

using namespace cuaudit;

namespace {

std::string type_of(const char* demangled, const KernelSignature& s, int i) {
  return std::string(demangled + s.params[i].type_begin, s.params[i].type_bytes);
}

}  // namespace

TEST_CASE("parameter types and alignments come from the demangled name") {
  KernelSignature s;
  const char* text = "write4(float4*, int)";
  REQUIRE(parse_kernel_params(text, s));
  CHECK(s.typed);
  REQUIRE(s.count == 2);
  CHECK(s.params[0].is_pointer);
  CHECK(s.params[0].alignment == 16);
  CHECK(type_of(text, s, 0) == "float4*");
  CHECK_FALSE(s.params[1].is_pointer);
}

TEST_CASE("template instantiations, const and restrict pointees, structs and nested templates") {
  KernelSignature s;
  const char* text =
      "void axpy<int4, 3>(int4*, double2 const* __restrict__, const short4*, Window, std::array<char*, 2ul>, "
      "__half2*, __nv_bfloat162*, double*, float* const*, void (*)(int), Foo*)";
  REQUIRE(parse_kernel_params(text, s));
  REQUIRE(s.count == 11);
  const uint32_t want[] = {16, 16, 8, 0, 0, 4, 4, 8, 8, 0, 0};
  const bool pointer[] = {true, true, true, false, false, true, true, true, true, false, true};
  for (int i = 0; i < 11; ++i) {
    INFO("parameter " << i << ": " << type_of(text, s, i));
    CHECK(s.params[i].is_pointer == pointer[i]);
    CHECK(s.params[i].alignment == want[i]);
  }
  CHECK(type_of(text, s, 4) == "std::array<char*, 2ul>");
}

TEST_CASE("kernels without parameters, and text without a parameter list") {
  KernelSignature s;
  CHECK(parse_kernel_params("noop()", s));
  CHECK(s.count == 0);
  CHECK(parse_kernel_params("noop(void)", s));
  CHECK(s.count == 0);
  CHECK_FALSE(parse_kernel_params("plain", s));
  CHECK_FALSE(parse_kernel_params(nullptr, s));
}

TEST_CASE("the real mangled names of the seeds' kernels demangle to their types") {
  KernelSignature s;
  char* text = demangle_kernel_name("_Z4fillI4int4EvPT_i");  // fill<int4>(int4*, int)
  REQUIRE(text);
  CHECK(std::string(text) == "void fill<int4>(int4*, int)");
  REQUIRE(parse_kernel_params(text, s));
  CHECK(s.params[0].alignment == 16);
  free(text);
  CHECK(demangle_kernel_name("plain") == nullptr);  // extern "C": no types
}

TEST_CASE("vector and scalar alignments follow vector_types.h") {
  CHECK(type_alignment("float4", 6) == 16);
  CHECK(type_alignment("float3", 6) == 4);
  CHECK(type_alignment("double2", 7) == 16);
  CHECK(type_alignment("longlong2", 9) == 16);
  CHECK(type_alignment("char4", 5) == 4);
  CHECK(type_alignment("double", 6) == 8);
  CHECK(type_alignment("unsigned char", 13) == 1);
  CHECK(type_alignment("double4_32a", 11) == 32);
  CHECK(type_alignment("MyStruct", 8) == 0);
}
