#include <doctest/doctest.h>

#include "frame_filter.h"
#include "function_names.h"

using cuaudit::called_function;
using cuaudit::user_frames;
using cuaudit::report::Frame;

namespace {
Frame frame(std::string fn, std::string module, std::string file = {}) {
  Frame f;
  f.function = std::move(fn);
  f.module = std::move(module);
  f.file = std::move(file);
  return f;
}
}  // namespace

TEST_CASE("CUDA-internal frames are dropped from the top so #0 is the program's call") {
  const auto frames = user_frames({
      frame("cuaudit::inject::on_call_exit(cuaudit::inject::ApiCall const&)", "/opt/libcuaudit-injection.so"),
      frame("", "/usr/local/cuda/lib64/libcupti.so.13"),
      frame("", "/usr/lib/x86_64-linux-gnu/libcuda.so.1"),
      frame("libcudart_static_4d8b33a106dceb3c07a56e26de61f545ab74bb7", "/src/app"),
      frame("cudaMalloc", "/src/app"),
      frame("cudaError cudaMalloc<float>(float**, unsigned long)", "/src/app",
            "/usr/local/cuda/include/cuda_runtime.h"),
      frame("step(int)", "/src/app", "/src/app.cu"),
      frame("main", "/src/app", "/src/app.cu"),
      frame("__libc_start_call_main", "/lib/libc.so.6"),
      frame("__libc_start_main_impl", "/lib/libc.so.6"),
      frame("_start", "/src/app"),
  });
  REQUIRE(frames.size() == 2);
  CHECK(frames[0].function == "step(int)");
  CHECK(frames[1].function == "main");
}

TEST_CASE("a user function whose name merely starts with cu is kept") {
  const auto frames = user_frames({frame("", "/usr/lib/libcuda.so.1"), frame("cuSolveMine()", "/src/app")});
  REQUIRE(frames.size() == 1);
  CHECK(frames[0].function == "cuSolveMine()");
}

TEST_CASE("a stack made only of internal frames is kept whole rather than emptied") {
  const auto frames = user_frames({frame("", "/usr/lib/libcuda.so.1"), frame("", "/usr/lib/libcuda.so.1")});
  CHECK(frames.size() == 2);
}

TEST_CASE("frames below main are cut even when the C library has no symbols") {
  const auto frames =
      user_frames({frame("", "/usr/lib/libcuda.so.1"), frame("step(int)", "/src/app"), frame("main", "/src/app"),
                   frame("", "/lib/libc.so.6"), frame("", "/lib/libc.so.6")});
  REQUIRE(frames.size() == 2);
  CHECK(frames[1].function == "main");
}

TEST_CASE("the function the program called is the outermost internal frame, bare") {
  CHECK(called_function({frame("", "/usr/lib/libcuda.so.1"), frame("cudaHostAlloc", "/src/app"),
                         frame("cudaError cudaMallocHost<float>(float**, unsigned long, unsigned int)", "/src/app",
                               "/usr/local/cuda/include/cuda_runtime.h"),
                         frame("upload(float const*, int)", "/src/app")}) == "cudaMallocHost");
  CHECK(called_function({frame("step(int)", "/src/app")}).empty());
}

TEST_CASE("the libc interposer's own frames are dropped: #0 is the program's free()") {
  const auto frames =
      user_frames({frame("cuaudit::inject::(anonymous namespace)::record_libc_release(int, void*)",
                         "/opt/cuaudit/libcuaudit-injection.so"),
                   frame("(anonymous namespace)::check(cuaudit::Api, void*)", "/opt/cuaudit/libcuaudit-preload.so"),
                   frame("free", "/opt/cuaudit/libcuaudit-preload.so"), frame("main", "/src/app", "/src/app.cu")});
  REQUIRE(frames.size() == 1);
  CHECK(frames[0].function == "main");
}

TEST_CASE("a <<<>>> launch starts at the launch line, not at nvcc's generated host wrapper") {
  const auto frames =
      user_frames({frame("cudaLaunchKernel", "/src/app"),
                   frame("__device_stub__Z5scalePff(float*, float)", "/src/app", "/tmp/x.cudafe1.stub.c"),
                   frame("scale(float*, float)", "/src/app", "/src/app.cu"),  // line info of the kernel
                   frame("main", "/src/app", "/src/app.cu")});
  REQUIRE(frames.size() == 1);
  CHECK(frames[0].function == "main");
}

TEST_CASE(
    "the name a stack's called function goes by: one short-name parser, return type, templates and parameters gone") {
  using cuaudit::report::short_function_name;
  CHECK(short_function_name("cudaError cudaMallocHost<float>(float**, unsigned long)") == "cudaMallocHost");
  CHECK(short_function_name("void ns::fill<int4, 3>(int4*, int)") == "ns::fill");
  CHECK(short_function_name("fill<int4>") == "fill");
  CHECK(short_function_name("main") == "main");
  // What the parser of before cut short (usability review 2026-12-04, 12).
  CHECK(short_function_name("Pool::operator()(unsigned long)") == "Pool::operator()");
  CHECK(short_function_name("Buffer<float>::~Buffer()") == "Buffer::~Buffer");
  CHECK(short_function_name("Foo::operator bool() const") == "Foo::operator bool");
  CHECK(short_function_name("main::{lambda(int)#1}::operator()(int) const") == "main::{lambda(int)#1}::operator()");
  // The function a stack called into CUDA through, by that parser.
  const std::vector<Frame> frames = {frame("cudaMalloc", "/usr/local/cuda/lib64/libcudart.so.13", ""),
                                     frame("Pool::operator()(unsigned long)", "/src/app", "/src/app.cu")};
  CHECK(cuaudit::called_function(frames) == "cudaMalloc");
}

TEST_CASE("NVTX's inline stubs are not the program's frames: a pool's annotation names the pool's code") {
  Frame stub, pool;
  stub.function = "nvtxMemRegionsRegister";
  stub.file = "/usr/local/cuda/targets/x86_64-linux/include/nvtx3/nvtxDetail/nvtxExtImplMem_v1.h";
  stub.line = 140;
  pool.function = "AnnotatedPool::take()";
  pool.file = "/src/annotated_pool.h";
  pool.line = 59;
  const auto frames = user_frames({stub, pool});
  REQUIRE(frames.size() == 1);
  CHECK(frames[0].function == "AnnotatedPool::take()");
}
