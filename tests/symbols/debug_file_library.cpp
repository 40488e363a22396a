// A library whose frames the debug-file test names: built with -g, then stripped by the test
// (tests/symbols/check_debug_files.py), its DWARF kept in a separate debug file.
#include "debug_file_library.h"

namespace {

// Internal linkage: once the library is stripped, nothing but its debug file names this frame.
__attribute__((noinline)) void allocate_in_library(void (*record)()) {
  record();          // @library-call
  asm volatile("");  // not a tail call: this frame stays on the stack
}

}  // namespace

void library_entry(void (*record)()) {
  allocate_in_library(record);
  asm volatile("");
}
