// Plays a program under cuaudit, without CUDA: the real recorder, trace writer and crash handlers
// record an allocation that is never released, then the process ends the way argv[2] says.
// check_crash.py then reads the trace with `cuaudit report`. Built as a shared library that
// crash_probe dlopens, as the driver loads the injection: its thread-locals are then allocated
// lazily, the way that can deadlock a signal handler.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "call_recorder.h"
#include "crash_handler.h"
#include "crash_probe.h"
#include "preload_link.h"
#include "process_record.h"
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

// What the injection's exit hook does: mark exit processing, then write each event at once.
void at_exit() {
  inject::on_process_end();
  inject::trace_writer().set_write_through();
}

// A static destructor's release, after exit processing began (registered before at_exit, so it
// runs after it): written through, each chunk followed by the writer's closing mark.
void release_after_the_end() {
  inject::on_call_enter(Api::cudaFree);
  inject::on_call_exit({Api::cudaFree, 0x7f0000002000, 0, 0, 1, 0});
}

// A signal that lands inside an append (the test-hooks recorder raises it there), whose handler
// exits (exit_in_append) or frees pinned memory with free() (free_in_append).
void* g_pinned = nullptr;
void exit_from_handler(int) { std::exit(5); }
void free_pinned_from_handler(int) { std::free(g_pinned); }
void land_signal_inside_next_append(void (*handler)(int)) {
  signal(SIGUSR1, handler);
  inject::set_inside_append_hook([] { raise(SIGUSR1); });
  inject::record_memory_sample(0, 1ull << 30, 2ull << 30);  // the append the signal interrupts
}

void record_pinned_allocation(void* p) {
  inject::on_call_enter(Api::cudaMallocHost);
  const inject::ApiCall call{Api::cudaMallocHost, reinterpret_cast<uint64_t>(p), 64, 0, 1, 0};
  inject::on_call_exit(call);
  inject::update_host_pointers(call);
}

// A forked child whose first event is its crash, inside malloc: its trace must be created from
// the handler without allocating (no flusher thread, no process description there).
int crash_in_forked_child() {
  // The injection's description of a new process allocates (its module map): so does this one.
  pthread_atfork(nullptr, nullptr, [] {
    inject::trace_writer().restart_in_child([] {
      void* volatile p = std::malloc(16);
      std::free(p);
      inject::write_process_info(100);
    });
  });
  const pid_t child = fork();
  if (child == 0) {
    void* volatile p = std::malloc(kCrashInsideMalloc);
    _exit(p ? 1 : 2);
  }
  int status = 0;
  while (waitpid(child, &status, 0) < 0) {
  }
  std::printf("child %s %d\n", WIFSIGNALED(status) ? "signal" : "exit",
              WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
  return 3;
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
  inject::write_process_info(100);  // as the injection does first
  inject::trace_writer().start_flusher(100);
  inject::install_crash_handlers();
  inject::connect_preload_library();  // when libcuaudit-preload.so is preloaded, as under the launcher
  if (std::strcmp(argv[2], "release_at_exit") == 0) {
    inject::on_call_enter(Api::cudaMalloc);
    inject::on_call_exit({Api::cudaMalloc, 0x7f0000002000, 8192, 0, 1, 0});
    std::atexit(release_after_the_end);
  }
  std::atexit(at_exit);
  leak_here();
  const char* how = argv[2];
  if (std::strcmp(how, "exit_in_append") == 0) land_signal_inside_next_append(exit_from_handler);
  if (std::strcmp(how, "free_in_append") == 0) {
    g_pinned = std::malloc(64);
    record_pinned_allocation(g_pinned);
    land_signal_inside_next_append(free_pinned_from_handler);
    return 0;
  }
  if (std::strcmp(how, "forked_child_crash") == 0) return crash_in_forked_child();
  if (std::strcmp(how, "segv") == 0) *static_cast<volatile int*>(nullptr) = 1;
  if (std::strcmp(how, "abort") == 0) std::abort();
  if (std::strcmp(how, "term") == 0) raise(SIGTERM);
  if (std::strcmp(how, "_exit") == 0) _exit(3);  // skips every exit hook: the preload library reports it
  if (std::strcmp(how, "malloc_crash") == 0 || std::strcmp(how, "inside_malloc") == 0)
    return 3;  // crash_probe's own thread crashes next
  if (std::strcmp(how, "altstack") == 0) return overflow(0);
  if (std::strcmp(how, "kill") == 0) {
    usleep(300 * 1000);  // past the flush interval
    kill(getpid(), SIGKILL);
  }
  return 3;
}
