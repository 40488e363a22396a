// Library handles: the program's own never destroyed are its leaks, at the create call; a
// framework's are held_by_allocator. Stacks as the H200 symbolized them (a cuBLAS handle made
// per request by a C++ server, and by JAX's XLA plugin).
#include <doctest/doctest.h>

#include "holders.h"
#include "library_handles.h"

using namespace cuaudit;

namespace {

report::Frame frame(const std::string& function, const std::string& module, const std::string& file = "",
                    int line = 0) {
  report::Frame f;
  f.function = function;
  f.module = module;
  f.file = file;
  f.line = line;
  return f;
}

const char kCublas[] = "/usr/local/cuda/targets/x86_64-linux/lib/libcublas.so.13";

report::Finding leak(uint64_t bytes, std::vector<report::Frame> stack) {
  report::Finding f;
  f.kind = report::FindingKind::Leak;
  f.severity = report::Severity::Error;
  f.api = "cudaMalloc";
  f.bytes = bytes;
  f.count = 3;
  f.stack = std::move(stack);
  return f;
}

// One of the three allocations cublasCreate makes, each at its own internal stack.
report::Finding handle_allocation(uint64_t bytes, int internal_frames, int line = 6) {
  std::vector<report::Frame> stack;
  for (int i = 0; i < internal_frames; ++i) stack.push_back(frame("", kCublas));
  stack.push_back(frame("cublasCreate_v2", kCublas));
  stack.push_back(frame("serve(int)", "/srv/server", "/srv/server.cpp", line));
  stack.push_back(frame("main", "/srv/server", "/srv/server.cpp", 13));
  return leak(bytes, std::move(stack));
}

}  // namespace

TEST_CASE("the program's own handles never destroyed: one leak per create call site, naming the missing destroy") {
  std::vector<report::Finding> findings = {handle_allocation(201326592, 2), handle_allocation(393216, 3),
                                           handle_allocation(3072, 3), handle_allocation(1024, 3, 9)};
  findings.push_back(leak(4096, {frame("upload(float const*)", "/srv/server", "/srv/server.cpp", 20)}));
  judge_library_handles(findings);
  REQUIRE(findings.size() == 3);
  const report::Finding& f = findings[0];
  CHECK(f.kind == report::FindingKind::Leak);
  CHECK(f.severity == report::Severity::Error);
  CHECK(f.api == "cublasCreate");
  CHECK(f.bytes == 201326592 + 393216 + 3072);
  CHECK(f.count == 9);
  REQUIRE(f.stack.size() == 3);
  CHECK(f.stack[0].function == "cublasCreate_v2");
  CHECK(f.stack[1].line == 6);
  CHECK(f.headline ==
        "Leak of 201722880 byte(s) in 9 allocation(s): a cuBLAS handle made by cublasCreate and never "
        "destroyed with cublasDestroy, created at:");
  REQUIRE(!f.notes.empty());
  CHECK(f.notes[0] ==
        "cublasCreate at /srv/server.cpp:6, never cublasDestroy: the cuBLAS handle's workspace lives "
        "until it is destroyed");
  CHECK(findings[1].stack[1].line == 9);   // another create site, another finding
  CHECK(findings[2].api == "cudaMalloc");  // not a handle: untouched
}

TEST_CASE("a handle a framework created is held by it, naming the framework") {
  std::vector<report::Frame> stack = {
      frame("", "/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cu13/lib/libcublas.so.13"),
      frame("cublasCreate_v2", "/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cu13/lib/libcublas.so.13"),
      frame("stream_executor::cuda::CUDABlas::Init()",
            "/opt/torch/.venv/lib/python3.12/site-packages/jax_plugins/xla_cuda13/xla_cuda_plugin.so"),
  };
  // cuDNN: the front end's cudnnCreate calls the graph library's; the outermost one counts.
  std::vector<report::Frame> cudnn = {
      frame("cudnnCreate", "/x/site-packages/nvidia/cudnn/lib/libcudnn_graph.so.9"),
      frame("cudnnCreate", "/x/site-packages/nvidia/cudnn/lib/libcudnn.so.9"),
      frame("stream_executor::gpu::CudnnSupport::Init()", "/x/site-packages/jax_plugins/xla_cuda13/xla_cuda_plugin.so"),
  };
  const auto cublas_held = framework_handle(stack);
  REQUIRE(cublas_held);
  CHECK(cublas_held->holder == "cuBLAS handle workspace");
  CHECK(cublas_held->note ==
        "JAX/XLA created this cuBLAS handle (cublasCreate) and keeps it for the life of "
        "the process");
  const auto cudnn_held = framework_handle(cudnn);
  REQUIRE(cudnn_held);
  CHECK(cudnn_held->holder == "cuDNN handle workspace");
  // As the leak check makes the finding: held_by_allocator, info, the framework named last.
  report::Finding f = leak(67108864, stack);
  describe_held(f, {cublas_held->holder, cublas_held->note}, false);
  CHECK(f.kind == report::FindingKind::HeldByAllocator);
  CHECK(f.severity == report::Severity::Info);
  CHECK(f.headline.rfind("Held by cuBLAS handle workspace:", 0) == 0);
  CHECK(f.notes.back() == cublas_held->note);
  // The program's own handle is no framework's, and its frames start at the create call.
  CHECK_FALSE(framework_handle(handle_allocation(1024, 2).stack));
  const auto handle_stack = handle_allocation(1024, 2).stack;
  CHECK(handle_stack.size() - create_frame(handle_stack) == 3);
  CHECK(create_frame(leak(1, {frame("f()", "/a")}).stack) == 0);  // no create call: all of it
}

TEST_CASE("only leaks are judged: a live snapshot's handle and a finding without a create call are left alone") {
  report::Finding live = handle_allocation(1024, 1);
  live.kind = report::FindingKind::Live;
  std::vector<report::Finding> findings = {live};
  judge_library_handles(findings);
  CHECK(findings[0].kind == report::FindingKind::Live);
  CHECK(findings[0].api == "cudaMalloc");
}
