// Short function names for charts and one-line lists (issue 35: the three text parsers gave
// "std::vector", "Buffer" and "Pool::operator" for the names below).
#include <doctest/doctest.h>

#include "function_names.h"

using cuaudit::report::short_function_name;

TEST_CASE("a short function name keeps the qualified name and drops templates, parameters and return type") {
  CHECK(short_function_name("void std::vector<float, std::allocator<float> >::_M_realloc_insert<float const&>("
                            "__gnu_cxx::__normal_iterator<float*, std::vector<float> >, float const&)") ==
        "std::vector::_M_realloc_insert");
  CHECK(short_function_name("Buffer<float>::~Buffer()") == "Buffer::~Buffer");
  CHECK(short_function_name("Pool::operator()(unsigned long)") == "Pool::operator()");
  CHECK(short_function_name("Matrix::operator<<(int) const") == "Matrix::operator<<");
  CHECK(short_function_name("bool Key::operator<(Key const&) const") == "Key::operator<");
  CHECK(short_function_name("Handle::operator bool() const") == "Handle::operator bool");
  CHECK(short_function_name("(anonymous namespace)::fill(float*, int)") == "(anonymous namespace)::fill");
  CHECK(short_function_name("at::native::(anonymous namespace)::cpu_kernel_vec<at::native::AddFunctor>(int)") ==
        "at::native::(anonymous namespace)::cpu_kernel_vec");
  CHECK(short_function_name("c10::cuda::CUDACachingAllocator::Native::DeviceCachingAllocator::alloc_block(c10::cuda::"
                            "CUDACachingAllocator::Native::(anonymous namespace)::AllocParams&, bool, "
                            "std::shared_ptr<c10::GatheredContext> const&, std::unique_lock<std::recursive_mutex>&)") ==
        "c10::cuda::CUDACachingAllocator::Native::DeviceCachingAllocator::alloc_block");
  CHECK(short_function_name("std::string make_name(int)") == "make_name");
}

TEST_CASE("names that are not C++ signatures are kept as they are") {
  CHECK(short_function_name("main") == "main");
  CHECK(short_function_name("<module>") == "<module>");
  CHECK(short_function_name("__pyx_f_13cupy_backends_4cuda_3api_7runtime_malloc") ==
        "__pyx_f_13cupy_backends_4cuda_3api_7runtime_malloc");
  CHECK(short_function_name("") == "");
}
