#include <doctest/doctest.h>

#include "growth_findings.h"
#include "leak_findings.h"
#include "replay.h"
#include "symbolizer.h"
#include "synthetic_trace.h"

using namespace cuaudit;
using cuaudit::testing::SyntheticTrace;

namespace {

constexpr uint64_t kMiB = 1 << 20;
constexpr uint64_t kMs = 1000000;

// y = model(x) in train.py, reached through PyTorch's own Python.
const std::vector<PythonFrameInfo> kForward = {
    {"/venv/lib/python3.12/site-packages/torch/nn/modules/linear.py", 125, "Linear.forward"},
    {"/venv/lib/python3.12/site-packages/torch/nn/modules/module.py", 1775, "Module._call_impl"},
    {"/home/me/train.py", 42, "<module>"},
};
const std::vector<PythonFrameInfo> kLoss = {{"/home/me/train.py", 43, "<module>"}};

std::vector<report::Finding> growth(const ProcessTrace& trace) {
  Symbolizer symbolizer;
  StackResolver stacks(trace, symbolizer);
  return growth_findings(trace, replay(trace).leaks, stacks);
}

}  // namespace

TEST_CASE("segments allocated in the first steps and held to the end are not growth") {
  SyntheticTrace t;
  t.python_stack(7, kForward);
  for (uint64_t i = 0; i < 6; ++i) t.alloc_from_python(Api::cudaMalloc, 0x1000000 * (i + 1), 20 * kMiB, 7);
  t.wait(2000 * kMs).end();  // the loop then ran two seconds on that memory
  CHECK(growth(t.trace()).empty());
}

TEST_CASE("memory allocated until the end from one line is growth, at the user's line") {
  SyntheticTrace t;
  t.python_stack(7, kForward);
  for (uint64_t i = 0; i < 10; ++i)
    t.alloc_from_python(Api::cudaMalloc, 0x1000000 * (i + 1), 20 * kMiB, 7).wait(100 * kMs);
  t.end();
  const auto findings = growth(t.trace());
  REQUIRE(findings.size() == 1);
  const report::Finding& f = findings[0];
  CHECK(f.kind == report::FindingKind::Growth);
  CHECK(f.count == 10);
  CHECK(f.bytes == 200 * kMiB);
  REQUIRE(!f.stack.empty());
  CHECK(f.stack[0].file == "/home/me/train.py");
  CHECK(f.stack[0].line == 42);
  REQUIRE(f.related.size() == 2);
  CHECK(f.related[0].stack.size() == 3);  // the whole Python stack, PyTorch's frames included
}

TEST_CASE("fewer than four allocations, or released memory, are never growth") {
  SyntheticTrace t;
  t.python_stack(7, kForward);
  for (uint64_t i = 0; i < 3; ++i)
    t.alloc_from_python(Api::cudaMalloc, 0x1000000 * (i + 1), 20 * kMiB, 7).wait(100 * kMs);
  for (uint64_t i = 0; i < 8; ++i) {
    t.alloc_from_python(Api::cudaMalloc, 0x9000000, 20 * kMiB, 7).wait(100 * kMs).release(Api::cudaFree, 0x9000000);
  }
  t.end();
  CHECK(growth(t.trace()).empty());
}

TEST_CASE("leaks from two Python lines through one native path are two sites, each naming its line") {
  SyntheticTrace t;
  t.python_stack(7, kForward).python_stack(8, kLoss);
  t.alloc_from_python(Api::cudaMalloc, 0x1000000, kMiB, 7, /*stack=*/5);
  t.alloc_from_python(Api::cudaMalloc, 0x2000000, kMiB, 8, /*stack=*/5);
  t.end();
  Symbolizer symbolizer;
  StackResolver stacks(t.trace(), symbolizer);
  const auto leaks = leak_findings(t.trace(), replay(t.trace()), stacks, testing::no_holders());
  REQUIRE(leaks.size() == 2);
  for (const auto& f : leaks) {
    REQUIRE(f.related.size() == 1);
    CHECK(f.related[0].role == report::RelatedRole::Python);
    REQUIRE(!f.notes.empty());
    CHECK(f.notes.back().find("allocated from Python at /home/me/train.py:4") == 0);
  }
}

TEST_CASE("with launch counts, time spent after the work (interpreter shutdown) does not hide growth") {
  SyntheticTrace t;
  t.python_stack(7, kForward);
  for (uint64_t i = 0; i < 8; ++i) {
    t.alloc_from_python(Api::cudaMalloc, 0x1000000 * (i + 1), 64 * kMiB, 7).after_launches(1000 + i * 500);
  }
  t.sample(0, 0, 1000 + 8 * 500).wait(5000 * kMs).end();  // a long shutdown that launches nothing
  const auto findings = growth(t.trace());
  REQUIRE(findings.size() == 1);
  CHECK(findings[0].headline.find("kernel launches") != std::string::npos);
}

TEST_CASE("with launch counts, segments of the first steps are steady state however short the run") {
  SyntheticTrace t;
  t.python_stack(7, kForward);
  for (uint64_t i = 0; i < 6; ++i) {
    t.alloc_from_python(Api::cudaMalloc, 0x1000000 * (i + 1), 20 * kMiB, 7)
        .after_launches(100 + i * 10)
        .wait(100 * kMs);
  }
  t.sample(0, 0, 30000).end();  // 60 steps of work followed
  CHECK(growth(t.trace()).empty());
}

TEST_CASE("tensors kept until the work ends are growth even when the interpreter frees them at shutdown") {
  // PYTORCH_NO_CUDA_MEMORY_CACHING=1: every tensor is an allocation; a list keeps one per step.
  SyntheticTrace t;
  t.python_stack(7, kForward).python_stack(8, kLoss);
  for (uint64_t step = 0; step < 20; ++step) {
    t.alloc_from_python(Api::cudaMalloc, 0x1000000 * (step + 1), 8 * kMiB, 7).after_launches(step * 100);
    t.alloc_from_python(Api::cudaMalloc, 0x90000000, kMiB, 8).after_launches(step * 100 + 50);  // a temporary
    t.release(Api::cudaFree, 0x90000000).sample(0, 0, step * 100 + 99);
  }
  for (uint64_t step = 0; step < 20; ++step) t.release(Api::cudaFree, 0x1000000 * (step + 1));  // shutdown
  t.end();
  const auto findings = growth(t.trace());
  REQUIRE(findings.size() == 1);
  CHECK(findings[0].count == 20);
  CHECK(findings[0].stack[0].line == 42);
}

TEST_CASE("in a Python process, segments without a Python stack that keep coming are growth at their native site") {
  SyntheticTrace t;
  t.python_stack(8, kLoss);  // the process is a Python interpreter
  for (uint64_t i = 0; i < 9; ++i)
    t.alloc(Api::cudaMalloc, 0x1000000 * (i + 1), 64 * kMiB, /*stack=*/5).after_launches(i * 1000);
  t.sample(0, 0, 9000).end();
  const auto findings = growth(t.trace());
  REQUIRE(findings.size() == 1);
  CHECK(findings[0].count == 9);
  REQUIRE(findings[0].notes.size() == 2);
  CHECK(findings[0].notes[1].find("PYTORCH_NO_CUDA_MEMORY_CACHING=1") != std::string::npos);
}

TEST_CASE("outside Python, memory without a Python stack is the leak check's, never growth") {
  SyntheticTrace t;
  for (uint64_t i = 0; i < 9; ++i) t.alloc(Api::cudaMalloc, 0x1000000 * (i + 1), 64 * kMiB, 5).after_launches(i * 1000);
  t.sample(0, 0, 9000).end();
  CHECK(growth(t.trace()).empty());
}

TEST_CASE("allocations without their own launch count take it from the memory samples around them") {
  SyntheticTrace t;
  t.python_stack(8, kLoss);
  for (uint64_t i = 0; i < 9; ++i) {
    t.sample(0, 0, i * 1000)
        .alloc(Api::cudaMalloc, 0x1000000 * (i + 1), 64 * kMiB, /*stack=*/5);  // no count of its own
  }
  t.sample(0, 0, 9000).end();
  REQUIRE(growth(t.trace()).size() == 1);
}

TEST_CASE("allocations between two samples take launches spread over the time between them (a fast loop)") {
  // The H200's torch.compile run: 30 kept outputs from PyTorch's history (no count of their own),
  // a sample every ~10 ms holding 64-128 launches; with the count of the sample before, the first
  // six read as launch 0 and the loop as memory kept from the start (no growth).
  SyntheticTrace t;
  t.python_stack(8, kLoss);
  t.sample(0, 0, 0);
  const uint64_t groups[] = {6, 5, 5, 5, 6, 3};
  const uint64_t launches_after[] = {128, 192, 320, 448, 576, 640};
  uint64_t key = 0x1000000;
  for (size_t g = 0; g < 6; ++g) {
    for (uint64_t k = 0; k < groups[g]; ++k, key += 0x1000000) t.wait(2 * kMs).alloc(Api::cudaMalloc, key, kMiB, 5);
    t.wait(kMs).sample(0, 0, launches_after[g]);
  }
  t.end();
  const auto findings = growth(t.trace());
  REQUIRE(findings.size() == 1);
  CHECK(findings[0].count == 30);
}

TEST_CASE("what the last step made and the next would replace is not growth, however many allocations") {
  SyntheticTrace t;
  t.python_stack(7, kForward);
  for (uint64_t step = 0; step < 20; ++step) {
    // Each step makes 6 tensors at one line; the step before's are released.
    for (uint64_t i = 0; i < 6; ++i) {
      if (step > 0) t.release(Api::cudaFree, 0x1000000 * ((step - 1) * 6 + i + 1));
    }
    for (uint64_t i = 0; i < 6; ++i) t.alloc_from_python(Api::cudaMalloc, 0x1000000 * (step * 6 + i + 1), kMiB, 7);
    t.wait(100 * kMs);
  }
  t.end();
  CHECK(growth(t.trace()).empty());
}

TEST_CASE("blocks with neither a Python nor a native stack are not lumped into a site") {
  SyntheticTrace t;
  t.python_stack(7, kLoss);
  t.block(Api::torchBlockAlloc, 0, 0x9000000, kMiB, trace::kNoStack);  // a Python process's autograd block
  for (uint64_t i = 0; i < 10; ++i)
    t.block(Api::torchBlockAlloc, 0, 0x1000000 * (i + 1), kMiB, trace::kNoStack).wait(100 * kMs);
  t.end();
  CHECK(growth(t.trace()).empty());
}

TEST_CASE("a big buffer made early beside a few small late ones is not growth (a library's workspace)") {
  SyntheticTrace t;
  t.python_stack(7, kForward);
  t.alloc_from_python(Api::cudaMalloc, 0x1000000, 64 * kMiB, 7).wait(500 * kMs);  // the workspace
  for (uint64_t i = 0; i < 4; ++i)
    t.alloc_from_python(Api::cudaMalloc, 0x8000000 + i * kMiB, kMiB / 2, 7).wait(200 * kMs);
  t.end();
  CHECK(growth(t.trace()).empty());
}

TEST_CASE("a buffer cached in the first step beside the last step's outputs is not growth (a transformer)") {
  // Seen on the H200 with a GPT-2 from transformers: the forward line keeps a mask it cached in its
  // first step, and at the end the last step's logits and attention caches; in between, everything
  // it made was released.
  SyntheticTrace t;
  t.python_stack(7, kForward);
  for (uint64_t i = 0; i < 2; ++i) t.alloc_from_python(Api::cudaMalloc, 0x100000000 + i * kMiB, kMiB, 7);
  for (uint64_t step = 0; step < 20; ++step) {
    for (uint64_t i = 0; i < 10; ++i) {
      if (step > 0) t.release(Api::cudaFree, 0x1000000 * ((step - 1) * 10 + i + 1));
    }
    for (uint64_t i = 0; i < 10; ++i) t.alloc_from_python(Api::cudaMalloc, 0x1000000 * (step * 10 + i + 1), kMiB, 7);
    t.wait(100 * kMs);
  }
  t.end();
  CHECK(growth(t.trace()).empty());
  // The same line keeping one output a step instead is growth.
  SyntheticTrace kept;
  kept.python_stack(7, kForward);
  for (uint64_t i = 0; i < 2; ++i) kept.alloc_from_python(Api::cudaMalloc, 0x100000000 + i * kMiB, kMiB, 7);
  for (uint64_t step = 0; step < 20; ++step)
    kept.alloc_from_python(Api::cudaMalloc, 0x1000000 * (step + 1), kMiB, 7).wait(100 * kMs);
  kept.end();
  CHECK(growth(kept.trace()).size() == 1);
}

TEST_CASE("a short loop after a start-up that launched many kernels still grows at its line (torch.compile)") {
  // Seen on the H200: torch.compile's first step launched most of the run's kernels (compiling and
  // tuning), then 30 quick steps each kept a clone; the loop is a small part of the launches.
  SyntheticTrace t;
  t.python_stack(7, kForward);
  t.sample(0, 0, 90000);  // start-up and compilation
  for (uint64_t step = 0; step < 30; ++step)
    t.alloc_from_python(Api::cudaMalloc, 0x1000000 * (step + 1), kMiB, 7).after_launches(90000 + step * 100);
  t.sample(0, 0, 93000).end();
  const auto findings = growth(t.trace());
  REQUIRE(findings.size() == 1);
  CHECK(findings[0].count == 30);
}

TEST_CASE("kept arrays the interpreter frees at shutdown are growth when only allocations saw the last launches") {
  // numba-cuda's shape: each step launches kernels, then keeps a to_device array; the samples come
  // every ten steps and at exit, after numba's deferred frees released the kept list.
  SyntheticTrace t;
  t.python_stack(7, kForward).python_stack(8, kLoss);
  for (uint64_t step = 0; step < 40; ++step) {
    t.alloc_from_python(Api::cudaMalloc, 0x90000000, kMiB, 8).after_launches(step * 5);  // a temporary
    t.release(Api::cudaFree, 0x90000000);
    t.alloc_from_python(Api::cudaMalloc, 0x1000000 * (step + 1), 4 * kMiB, 7).after_launches(step * 5 + 5);
    if (step % 10 == 9) t.sample(0, 0, step * 5 + 5 - 3);  // the launch clock is published in batches
  }
  for (uint64_t step = 0; step < 40; ++step) t.release(Api::cudaFree, 0x1000000 * (step + 1));  // shutdown
  t.sample(0, 0, 200).end();  // the exit's sample sees the last count, after the frees
  const auto findings = growth(t.trace());
  REQUIRE(findings.size() == 1);
  CHECK(findings[0].count == 40);
  CHECK(findings[0].stack[0].line == 42);
}

TEST_CASE("what a program frees after its last launch in its own cleanup is not kept from before the work ended") {
  // A correct loop: one output per step replaced by the next; the last one freed after the work.
  SyntheticTrace t;
  t.python_stack(7, kForward);
  for (uint64_t step = 0; step < 40; ++step) {
    t.alloc_from_python(Api::cudaMalloc, 0x1000000 * (step + 1), 4 * kMiB, 7).after_launches(step * 5 + 5);
    if (step) t.release(Api::cudaFree, 0x1000000 * step);
  }
  t.release(Api::cudaFree, 0x1000000 * 40).sample(0, 0, 200).end();
  CHECK(growth(t.trace()).empty());
}

TEST_CASE("what a library asked for itself and frees at shutdown is not growth (numba-cuda's pending frees)") {
  // numba-cuda's own test suite, installed with the package: every frame is the library's. Its
  // memory manager defers frees and releases what is pending when the interpreter shuts down.
  const std::vector<PythonFrameInfo> library_only = {
      {"/venv/lib/python3.12/site-packages/numba/cuda/cudadrv/driver.py", 324, "safe_cuda_api_call"},
      {"/venv/lib/python3.12/site-packages/numba/cuda/tests/cudapy/test_vectorize.py", 90, "test_1d"},
      {"/venv/lib/python3.12/site-packages/_pytest/python.py", 157, "pytest_pyfunc_call"},
  };
  SyntheticTrace t;
  t.python_stack(9, library_only);
  for (uint64_t step = 0; step < 40; ++step) {
    t.alloc_from_python(Api::cudaMalloc, 0x1000000 * (step + 1), 4 * kMiB, 9).after_launches(step * 5 + 5);
    if (step % 10 == 9) t.sample(0, 0, step * 5 + 2);
  }
  for (uint64_t step = 0; step < 40; ++step) t.release(Api::cudaFree, 0x1000000 * (step + 1));  // shutdown
  t.sample(0, 0, 200).end();
  CHECK(growth(t.trace()).empty());
}
