// The ways programs call CUDA, checked and not. Built twice, at -O0 and -O2 (tests/CMakeLists.txt).
#include "call_patterns.h"

#include "fake_api.h"

#define CUDA_CHECK(call)             \
  do {                               \
    int rc_ = (call);                \
    if (rc_ != 0) report_error(rc_); \
  } while (0)

namespace {

__attribute__((noinline)) void ignored() {
  void* p;
  fake_cuda_call(&p);
}
__attribute__((noinline)) void void_cast() {
  void* p;
  (void)fake_cuda_call(&p);
}
__attribute__((noinline)) void if_checked() {
  void* p;
  if (fake_cuda_call(&p) != 0) report_error(1);
}
__attribute__((noinline)) void macro_checked() {
  void* p;
  CUDA_CHECK(fake_cuda_call(&p));
}
__attribute__((noinline)) void stored_and_checked_later() {
  void* p;
  int e = fake_cuda_call(&p);
  other_work();
  if (e != 0) report_error(e);
}
__attribute__((noinline)) int helper_returning_it() {
  void* p;
  return fake_cuda_call(&p);
}
__attribute__((noinline)) void checked_through_helper() {
  if (helper_returning_it() != 0) report_error(2);
}
__attribute__((noinline)) void ignored_through_helper() { helper_returning_it(); }
__attribute__((noinline)) void passed_to_a_function() {
  void* p;
  report_error(fake_cuda_call(&p));
}

}  // namespace

const CallPattern kCallPatterns[] = {
    {"cudaMalloc(&p, n);", ignored, false},
    {"(void)cudaMalloc(&p, n);", void_cast, false},
    {"if (cudaMalloc(&p, n) != cudaSuccess)", if_checked, true},
    {"CUDA_CHECK(cudaMalloc(&p, n));", macro_checked, true},
    {"e = cudaMalloc(&p, n); ...; if (e)", stored_and_checked_later, true},
    {"if (helper() != cudaSuccess), helper returns cudaMalloc's result", checked_through_helper, true},
    {"helper(); with helper returning cudaMalloc's result", ignored_through_helper, false},
    {"report(cudaMalloc(&p, n));", passed_to_a_function, true},
};
const size_t kCallPatternCount = sizeof kCallPatterns / sizeof kCallPatterns[0];
