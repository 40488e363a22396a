// Records two leaked cudaMallocs, as the injection would, without CUDA (the real recorder writes
// the trace, as tests/crash/ does): one whose stack runs through a library of ours
// (debug_file_library.cpp), one called back from inside libc's qsort (a distribution's stripped
// library, named from libc6-dbg's files under /usr/lib/debug/.build-id).
// Usage: debug_file_program (under cuaudit, which sets CUAUDIT_TRACE_DIR).
#include <cstdio>
#include <cstdlib>

#include "call_recorder.h"
#include "debug_file_library.h"
#include "process_record.h"
#include "trace_writer.h"

using namespace cuaudit;

namespace {

__attribute__((noinline)) void record_leak(uint64_t key) {
  inject::on_call_enter(Api::cudaMalloc);
  inject::on_call_exit({Api::cudaMalloc, key, 1 << 20, 0, 1, 0});
}

__attribute__((noinline)) void record_from_library() { record_leak(0x7f0000100000); }

int compare_and_record(const void* a, const void* b) {
  static bool recorded = false;
  if (!recorded) record_leak(0x7f0000200000);
  recorded = true;
  return *static_cast<const int*>(a) - *static_cast<const int*>(b);
}

}  // namespace

int main() {
  const char* dir = std::getenv("CUAUDIT_TRACE_DIR");
  char error[256];
  if (!dir || !inject::trace_writer().open(dir, error, sizeof error)) {
    std::fprintf(stderr, "debug_file_program: no trace (%s): run it under cuaudit\n",
                 dir ? error : "CUAUDIT_TRACE_DIR unset");
    return 2;
  }
  inject::write_process_info(50);
  library_entry(record_from_library);
  int values[] = {3, 1, 2};
  qsort(values, 3, sizeof values[0], compare_and_record);
  inject::on_process_end();
  inject::trace_writer().set_write_through();
  return 0;
}
