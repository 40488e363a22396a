// Plays a program under cuaudit, without CUDA: the real recorder, trace writer and crash handlers
// record an allocation that is never released, then the process ends the way argv[2] says.
// check_crash.py then reads the trace with `cuaudit report`. Built as a shared library that
// crash_probe dlopens, as the driver loads the injection: its thread-locals are then allocated
// lazily, the way that can deadlock a signal handler.
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

namespace {

// The program's own SIGSEGV handler on an alternate stack, installed before cuaudit's (as Python's
// faulthandler is): a stack overflow must still reach it.
char g_alternate_stack[1 << 16];
void own_segv_handler(int) {
  const char text[] = "the program's own SIGSEGV handler ran\n";
  ssize_t ignored = write(2, text, sizeof text - 1);
  (void)ignored;
  _exit(42);
}
void install_own_altstack_handler() {
  stack_t stack{};
  stack.ss_sp = g_alternate_stack;
  stack.ss_size = sizeof g_alternate_stack;
  sigaltstack(&stack, nullptr);
  struct sigaction action {};
  action.sa_handler = own_segv_handler;
  action.sa_flags = SA_ONSTACK;
  sigemptyset(&action.sa_mask);
  sigaction(SIGSEGV, &action, nullptr);
}
__attribute__((noinline)) int overflow(int depth) {
  volatile char frame[1024];
  frame[0] = static_cast<char>(depth);
  return overflow(depth + 1) + frame[0];
}

}  // namespace

extern "C" __attribute__((visibility("default"))) int crash_probe_main(int argc, char** argv) {
  if (argc != 3) return 2;
  if (std::strcmp(argv[2], "altstack") == 0) install_own_altstack_handler();
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
  if (std::strcmp(how, "malloc_crash") == 0) return 3;  // crash_probe's own thread crashes next
  if (std::strcmp(how, "altstack") == 0) return overflow(0);
  if (std::strcmp(how, "kill") == 0) {
    usleep(300 * 1000);  // past the flush interval
    kill(getpid(), SIGKILL);
  }
  return 3;
}
