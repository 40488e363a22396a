// Plays a program under cuaudit, without CUDA: the real recorder, trace writer and crash handlers
// record an allocation that is never released, then the process ends the way argv[2] says.
// check_crash.py then reads the trace with `cuaudit report`.
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "call_recorder.h"
#include "crash_handler.h"
#include "preload_link.h"
#include "trace_writer.h"

using namespace cuaudit;

__attribute__((noinline)) void leak_here() {
  inject::on_call_enter(Api::cudaMalloc);
  inject::on_call_exit({Api::cudaMalloc, 0x7f0000001000, 4096, 0, 1, 0});
}

int main(int argc, char** argv) {
  if (argc != 3) return 2;
  char error[256];
  if (!inject::trace_writer().open(argv[1], error, sizeof error)) {
    std::fprintf(stderr, "%s\n", error);
    return 2;
  }
  inject::trace_writer().start_flusher(100);
  inject::install_crash_handlers();
  inject::connect_preload_library();  // when libcuaudit-preload.so is preloaded, as under the launcher
  leak_here();
  const char* how = argv[2];
  if (std::strcmp(how, "segv") == 0) *static_cast<volatile int*>(nullptr) = 1;
  if (std::strcmp(how, "abort") == 0) std::abort();
  if (std::strcmp(how, "term") == 0) raise(SIGTERM);
  if (std::strcmp(how, "_exit") == 0) _exit(3);  // skips every exit hook: the preload library reports it
  if (std::strcmp(how, "kill") == 0) {
    usleep(300 * 1000);  // past the flush interval
    kill(getpid(), SIGKILL);
  }
  return 3;
}
