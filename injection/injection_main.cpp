// InitializeInjection: the entry point the CUDA driver calls when CUDA_INJECTION64_PATH names
// this library. Everything the injection does starts here.
//
// Configuration comes from the environment, set by the cuaudit launcher: every variable is
// declared once in common/environment.inc (and listed in docs/INJECTION.md).
#include <pthread.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "call_recorder.h"
#include "cfi_unwinder.h"
#include "crash_handler.h"
#include "cupti_subscriber.h"
#include "cupti_unified_memory.h"
#include "device_state.h"
#include "driver_api.h"
#include "env_number.h"
#include "environment.h"
#include "in_target_log.h"
#include "kernel_code.h"
#include "launch_checker.h"
#include "memory_sampler.h"
#include "module_map.h"
#include "notice_writer.h"
#include "pool_recorder.h"
#include "preload_link.h"
#include "process_record.h"
#include "python_stack.h"
#include "readable_mappings.h"
#include "sanitizer_subscriber.h"
#include "stack_capture.h"
#include "stack_sampling.h"
#include "stage_stats.h"
#include "standalone_report.h"
#include "trace_format.h"
#include "trace_writer.h"

namespace cuaudit::inject {
namespace {

std::atomic<bool> g_initialized{false};

unsigned g_flush_interval_ms = 100;

// Runs before the program's static destructors (registered at the first CUDA call, after
// them): CUDA calls made by those destructors still arrive, so keep recording, but write each
// event at once, since no flusher or thread-exit hook is guaranteed to run again.
void at_exit() noexcept {
  flush_unified_memory_records();  // what CUPTI still holds of managed memory's migrations
  flush_device_heap();             // --device-heap: the calls still in the buffers
  stop_memory_sampler();
  if (const char* stats = getenv(cuaudit::env_name(cuaudit::EnvVar::Stats)); stats && strcmp(stats, "1") == 0) {
    log_launch_check_stats();
    log_mapping_stats();
    log_unwind_stats();
    log_stage_stats();
  }
  on_process_end();
  trace_writer().set_write_through();
  // Records that found no buffer (or were too large) are said, so the report knows it is incomplete.
  if (const uint64_t dropped = trace_writer().dropped_records()) {
    char text[160];
    snprintf(text, sizeof text, "%llu record(s) could not be written (no trace buffer or a failed write)",
             static_cast<unsigned long long>(dropped));
    write_notice(cuaudit::trace::NoticeCode::DroppedEvents, text);
  }
}

// What the launcher's options ask the callbacks to do (--check-api-results, --check-launch-params,
// --track-resources).
SubscribeOptions subscribe_options_from_env() noexcept {
  const char* lint = getenv(cuaudit::env_name(cuaudit::EnvVar::CheckApiResults));
  const char* launches = getenv(cuaudit::env_name(cuaudit::EnvVar::CheckLaunchParams));
  const char* resources = getenv(cuaudit::env_name(cuaudit::EnvVar::TrackResources));
  SubscribeOptions options;
  options.record_call_sites = lint && strcmp(lint, "1") == 0;
  options.check_launches = !launches || strcmp(launches, "0") != 0;
  options.track_resources = resources && strcmp(resources, "1") == 0;
  return options;
}

bool g_application_only = false;  // --target-processes application-only

// A forked child that does not exec starts a history of its own, in a trace of its own: its
// parent's allocations are the parent's. (A child that execs loads the injection afresh.)
void in_forked_child() noexcept {
  forget_memory_sampler_in_child();
  reset_pool_state_after_fork();
  if (g_application_only) {
    trace_writer().disable();
    return;
  }
  forget_recorded_modules();
  forget_device_info_in_child();
  forget_written_stacks();
  forget_written_python_stacks();
  trace_writer().restart_in_child([] {
    write_process_info(g_flush_interval_ms);
    record_stack_sampling();
    record_loaded_modules();
  });
}

// --target-processes application-only: only the process the launcher started is tracked.
bool is_untracked_process() noexcept {
  const char* mode = getenv(cuaudit::env_name(cuaudit::EnvVar::TargetProcesses));
  g_application_only = mode && strcmp(mode, "application-only") == 0;
  if (!g_application_only) return false;
  const char* root = getenv(cuaudit::env_name(cuaudit::EnvVar::RootPid));
  return root && strtol(root, nullptr, 10) != static_cast<long>(getpid());
}

}  // namespace
}  // namespace cuaudit::inject

// The last thing to run in the process: write what the exiting process still had buffered, then,
// without the launcher, report.
__attribute__((destructor)) static void cuaudit_flush_at_unload() {
  cuaudit::inject::trace_writer().flush_all();
  cuaudit::inject::report_at_exit_if_standalone();
}

extern "C" __attribute__((visibility("default"))) int InitializeInjection(void) {
  using namespace cuaudit;
  using namespace cuaudit::inject;
  if (g_initialized.exchange(true)) return 1;
  if (is_untracked_process()) return 1;
  if (const char* empty = getenv(cuaudit::env_name(cuaudit::EnvVar::EmptyCallbacks));
      empty && strcmp(empty, "1") == 0) {
    // The benchmarks' floor: CUPTI calling the same callbacks, which do nothing; nothing recorded.
    resolve_driver_api();
    char error[512];
    SubscribeOptions options;
    options.empty_callbacks = true;
    if (!subscribe_callbacks(options, error, sizeof error)) log_error("%s", error);
    return 1;
  }
  if (const char* stats = getenv(cuaudit::env_name(cuaudit::EnvVar::Stats)); stats && strcmp(stats, "1") == 0)
    start_stage_stats();

  char dir[4096];
  const char* configured = getenv(cuaudit::env_name(cuaudit::EnvVar::TraceDir));
  if (configured && *configured) {
    snprintf(dir, sizeof dir, "%s", configured);
  } else {
    // A fresh private directory (mkdtemp: unpredictable, mode 0700), never one someone else made.
    const char* tmp = getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%s/cuaudit-%ld-XXXXXX", tmp && *tmp ? tmp : "/tmp", static_cast<long>(getpid()));
    if (!mkdtemp(dir)) {
      log_error(
          "cannot create a directory for the trace in %s (%s); this process is not tracked: set "
          "CUAUDIT_TRACE_DIR",
          tmp && *tmp ? tmp : "/tmp", strerror(errno));
      return 1;
    }
    log_warning("CUAUDIT_TRACE_DIR is not set; recording to %s (analyze it with: cuaudit report %s)", dir, dir);
  }
  adopt_run_as_root_if_standalone(dir);

  char error[512];
  if (!trace_writer().open(dir, error, sizeof error)) {
    log_error("%s; this process is not tracked", error);
    return 1;  // never fail the program itself
  }
  g_flush_interval_ms =
      static_cast<unsigned>(number_from_env(env_name(EnvVar::FlushIntervalMs), 100, 60000, "milliseconds"));
  resolve_driver_api();
  set_device_of_pointer(device_ordinal_of);
  resolve_python_api();
  constexpr uint64_t kAnyBytes = ~uint64_t{0};
  configure_stack_sampling(number_from_env(env_name(EnvVar::StackSampleBytes), 0, kAnyBytes, "bytes"),
                           number_from_env(env_name(EnvVar::StackExactBytes), uint64_t{1} << 20, kAnyBytes, "bytes"));
  write_process_info(g_flush_interval_ms);
  record_stack_sampling();
  record_loaded_modules();

  const char* device_heap = getenv(cuaudit::env_name(cuaudit::EnvVar::DeviceHeap));
  const bool device_heap_mode = device_heap && strcmp(device_heap, "1") == 0;
  configure_kernel_code();
  const SubscribeOptions options = subscribe_options_from_env();
  // --device-heap: the Compute Sanitizer API instead of CUPTI (a process has room for one of them).
  if (device_heap_mode ? !subscribe_device_heap(error, sizeof error)
                       : !subscribe_callbacks(options, error, sizeof error)) {
    log_error("%s", error);
    write_notice(cuaudit::trace::NoticeCode::SubscribeFailed, error);
    trace_writer().flush_all();
    trace_writer().disable();
    return 1;
  }
  connect_preload_library();
  install_crash_handlers();
  atexit(at_exit);
  pthread_atfork(nullptr, nullptr, in_forked_child);
  trace_writer().start_flusher(g_flush_interval_ms);
  start_memory_sampler(
      static_cast<unsigned>(number_from_env(env_name(EnvVar::SampleIntervalMs), 10, 60000, "milliseconds")));
  return 1;
}
