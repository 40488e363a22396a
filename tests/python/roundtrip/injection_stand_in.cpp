// Stands in for the injection library in the Python hooks' round trip, without CUDA: the real
// recorder and trace writer open CUAUDIT_TRACE_DIR's trace when the test's program loads this
// library (as CUDA_INJECTION64_PATH, where the CuPy hook finds it), the real pool entry points
// (injection/pool_recorder.cpp, declared in the generated cuaudit_pool_api.h) take the hooks'
// calls, and stand_in_cuda_alloc records the CUDA allocation a framework's pool takes its memory
// from, as the CUPTI callback would have, and stand_in_launches the kernels it launches (the clock of
// the program's work, which the growth check reads). At exit the trace ends as the injection's exit hook ends it.
#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include "call_recorder.h"
#include "cuaudit_pool_api.h"
#include "event_clock.h"
#include "process_record.h"
#include "python_stack.h"
#include "trace_writer.h"

using namespace cuaudit;

namespace {

// The entry points live in the recorder's static library: named here, they are linked in and exported.
__attribute__((used)) const void* const kEntryPoints[] = {
    reinterpret_cast<const void*>(&cuaudit_memory_source), reinterpret_cast<const void*>(&cuaudit_pool_register),
    reinterpret_cast<const void*>(&cuaudit_pool_block), reinterpret_cast<const void*>(&cuaudit_pool_segment)};

void at_exit() {
  inject::on_process_end();
  inject::trace_writer().set_write_through();
}

__attribute__((constructor)) void open_trace() {
  const char* dir = std::getenv("CUAUDIT_TRACE_DIR");
  char error[256];
  if (!dir || !inject::trace_writer().open(dir, error, sizeof error)) {
    std::fprintf(stderr, "injection stand-in: no trace: %s\n", dir ? error : "CUAUDIT_TRACE_DIR is not set");
    return;
  }
  inject::write_process_info(100);  // as the injection does first
  inject::trace_writer().start_flusher(100);
  inject::resolve_python_api();  // as InitializeInjection does: the pool entry points record Python stacks
  std::atexit(at_exit);
}

}  // namespace

// A CUDA allocation (cudaMalloc when `driver` is 0, cuMemAlloc otherwise) of `bytes` at `pointer`.
extern "C" __attribute__((visibility("default"))) void stand_in_cuda_alloc(uint64_t pointer, uint64_t bytes,
                                                                           int32_t driver) {
  const Api api = driver ? Api::cuMemAlloc : Api::cudaMalloc;
  inject::on_call_enter(api);
  inject::on_call_exit({api, pointer, bytes, 0, 1, 0});
}

// `count` kernel launches, as the CUPTI launch callbacks count them.
extern "C" __attribute__((visibility("default"))) void stand_in_launches(uint32_t count) {
  for (uint32_t i = 0; i < count; ++i) inject::note_launch();
}
