#include "preload_link.h"

#include <dlfcn.h>

#include "event_clock.h"
#include "in_target_log.h"
#include "trace_format.h"
#include "trace_writer.h"

namespace cuaudit::inject {
namespace {

struct Interposer {
  int (*track)(void*) = nullptr;
  void (*untrack)(void*) = nullptr;
  void (*forget_all)() = nullptr;
};
Interposer g_interposer;  // written once at initialization, before any callback

// Called by the interposer, inside free/realloc/delete, before the call goes on.
void record_libc_release(int api, void* pointer) noexcept {
  const Api which = static_cast<Api>(api);
  on_call_enter(which);
  ApiCall call{which};
  call.key = reinterpret_cast<uint64_t>(pointer);
  call.device = -1;
  on_call_exit(call);
  trace_writer().flush_all();  // the C library is about to abort the process
}

// Called by the interposer when the program ends itself. exit() still runs the exit hooks, so
// only its status is worth keeping; _exit, _Exit and quick_exit skip them: write everything now.
// _exit may be called from the program's own signal handler, on a thread interrupted inside an
// append: that path never waits for a buffer.
void record_exit_call(int status, int how) noexcept {
  trace::ExitCallRecord r{};
  r.seq = next_sequence();
  r.time_ns = monotonic_ns();
  r.status = status;
  r.how = static_cast<uint32_t>(how);
  if (how == static_cast<int>(trace::ExitHow::Exit)) {
    trace_writer().append(r);  // exit processing follows and writes everything
  } else {
    trace_writer().flush_without_waiting(r);
  }
}

}  // namespace

void connect_preload_library() noexcept {
  if (auto connect_exit =
          reinterpret_cast<void (*)(void (*)(int, int))>(dlsym(RTLD_DEFAULT, "cuaudit_preload_connect_exit"))) {
    connect_exit(record_exit_call);
  }
  auto connect = reinterpret_cast<void (*)(void (*)(int, void*))>(dlsym(RTLD_DEFAULT, "cuaudit_preload_connect"));
  if (!connect) return;
  g_interposer.track = reinterpret_cast<int (*)(void*)>(dlsym(RTLD_DEFAULT, "cuaudit_preload_track"));
  g_interposer.untrack = reinterpret_cast<void (*)(void*)>(dlsym(RTLD_DEFAULT, "cuaudit_preload_untrack"));
  g_interposer.forget_all = reinterpret_cast<void (*)()>(dlsym(RTLD_DEFAULT, "cuaudit_preload_forget_all"));
  if (!g_interposer.track || !g_interposer.untrack || !g_interposer.forget_all) {
    g_interposer = {};
    return;
  }
  connect(record_libc_release);
}

void update_host_pointers(const ApiCall& call) noexcept {
  if (!g_interposer.track || call.result != 0 || call.key == 0) return;
  const ApiInfo& info = api_info(call.api);
  if (info.role == ApiRole::Alloc) {
    if (info.family == MemoryFamily::PinnedHost || info.family == MemoryFamily::Managed) {
      if (!g_interposer.track(reinterpret_cast<void*>(call.key))) {
        static bool warned = false;
        if (!warned) {
          warned = true;
          log_warning("too many live pinned and managed allocations to check every free() against them");
        }
      }
    }
  } else if (info.family != MemoryFamily::HostHeap) {
    g_interposer.untrack(reinterpret_cast<void*>(call.key));
  }
}

void forget_host_pointers() noexcept {
  if (g_interposer.forget_all) g_interposer.forget_all();
}

}  // namespace cuaudit::inject
