#include "launcher.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <iostream>
#include <thread>

#include <fmt/format.h>

#include "descendants.h"
#include "environment.h"
#include "exit_codes.h"

namespace cuaudit {
namespace {

bool is_regular_file(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

std::string self_dir() {
  char buf[PATH_MAX];
  const ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return ".";
  buf[n] = '\0';
  std::string path(buf);
  return path.substr(0, path.rfind('/'));
}

void check_loadable(const std::string& path) {
  // RTLD_LAZY loads the library and its dependencies (libcupti) without running any CUDA code.
  void* handle = dlopen(path.c_str(), RTLD_LAZY | RTLD_LOCAL);
  if (!handle) {
    const char* why = dlerror();
    throw LaunchError(kExitToolFailure,
                      fmt::format("the injection library {} cannot be loaded: {}\n"
                                  "  (if libcupti.so.13 is missing, add the CUDA toolkit's lib64 directory to "
                                  "LD_LIBRARY_PATH)",
                                  path, why ? why : "unknown error"));
  }
  if (!dlsym(handle, "InitializeInjection")) {
    dlclose(handle);
    throw LaunchError(kExitToolFailure,
                      fmt::format("{} is not a cuaudit injection library (no InitializeInjection)", path));
  }
  dlclose(handle);
}

}  // namespace

std::string resolve_program(const std::string& name) {
  if (name.empty()) throw LaunchError(kExitUsage, "no program given (the program's name is empty)");
  if (name.find('/') != std::string::npos) {
    struct stat st;
    if (stat(name.c_str(), &st) != 0) throw LaunchError(kExitNotFound, fmt::format("{}: no such file", name));
    if (S_ISDIR(st.st_mode)) throw LaunchError(kExitNotExecutable, fmt::format("{}: is a directory", name));
    if (access(name.c_str(), X_OK) != 0) {
      throw LaunchError(kExitNotExecutable, fmt::format("{}: permission denied (not executable)", name));
    }
    return name;
  }
  // As a shell searches: the first executable regular file in PATH; a file there that is not
  // executable is passed over, and named only when nothing further on is executable (126).
  const char* path_env = getenv("PATH");
  std::string paths = path_env ? path_env : "/usr/local/bin:/usr/bin:/bin";
  std::string not_executable;
  size_t start = 0;
  while (start <= paths.size()) {
    size_t end = paths.find(':', start);
    if (end == std::string::npos) end = paths.size();
    std::string dir = paths.substr(start, end - start);
    if (dir.empty()) dir = ".";
    const std::string candidate = dir + "/" + name;
    if (is_regular_file(candidate)) {
      if (access(candidate.c_str(), X_OK) == 0) return candidate;
      if (not_executable.empty()) not_executable = candidate;
    }
    start = end + 1;
  }
  if (!not_executable.empty()) {
    throw LaunchError(kExitNotExecutable, fmt::format("{}: permission denied (not executable)", not_executable));
  }
  throw LaunchError(kExitNotFound, fmt::format("{}: command not found", name));
}

std::string find_injection_library(const std::string& explicit_path) {
  std::string path = explicit_path;
  if (path.empty()) {
    if (const char* env = getenv(env_name(EnvVar::InjectionPath)); env && *env) path = env;
  }
  if (path.empty()) {
    const std::string dir = self_dir();
    for (const std::string& candidate :
         {dir + "/libcuaudit-injection.so", dir + "/../lib/cuaudit/libcuaudit-injection.so"}) {
      if (is_regular_file(candidate)) {
        path = candidate;
        break;
      }
    }
    if (path.empty()) {
      throw LaunchError(kExitToolFailure,
                        fmt::format("cannot find libcuaudit-injection.so beside {} or in {}/../lib/cuaudit; "
                                    "give its path with --injection-path",
                                    dir, dir));
    }
  }
  if (!is_regular_file(path)) {
    throw LaunchError(kExitToolFailure, fmt::format("the injection library {} does not exist", path));
  }
  char absolute[PATH_MAX];
  if (realpath(path.c_str(), absolute)) path = absolute;  // the program may chdir
  check_loadable(path);
  return path;
}

std::string find_sanitizer_library() {
  if (const char* env = getenv(env_name(EnvVar::SanitizerLibrary)); env && *env) {
    if (!is_regular_file(env))
      throw LaunchError(kExitToolFailure, fmt::format("{}={} does not exist", env_name(EnvVar::SanitizerLibrary), env));
    return env;
  }
  std::vector<std::string> folders;
  for (const char* home : {static_cast<const char*>(getenv("CUDA_HOME")), static_cast<const char*>(getenv("CUDA_PATH")),
                           "/usr/local/cuda"})
    if (home && *home &&
        std::find(folders.begin(), folders.end(), std::string(home) + "/compute-sanitizer") == folders.end())
      folders.push_back(std::string(home) + "/compute-sanitizer");
  try {
    char real[PATH_MAX];
    const std::string tool = resolve_program("compute-sanitizer");
    if (realpath(tool.c_str(), real)) folders.push_back(std::string(real).substr(0, std::string(real).rfind('/')));
  } catch (const LaunchError&) {
    // not on PATH: the folders above are all there is
  }
  for (const std::string& folder : folders)
    if (is_regular_file(folder + "/libsanitizer-public.so")) return folder + "/libsanitizer-public.so";
  throw LaunchError(kExitToolFailure,
                    fmt::format("--device-heap needs the Compute Sanitizer API library (libsanitizer-public.so, in the "
                                "CUDA toolkit's compute-sanitizer folder); it is not in {}: install compute-sanitizer "
                                "or set {} to its path",
                                fmt::join(folders, ", "), env_name(EnvVar::SanitizerLibrary)));
}

namespace {
// `name` in the directory of the injection library.
std::string beside_injection(const std::string& injection_path, const char* name) {
  return injection_path.substr(0, injection_path.rfind('/') + 1) + name;
}
}  // namespace

std::string find_preload_library(const std::string& injection_path) {
  const std::string path = beside_injection(injection_path, "libcuaudit-preload.so");
  return is_regular_file(path) ? path : std::string();
}

std::string find_python_hooks(const std::string& injection_path) {
  const std::string dir = beside_injection(injection_path, "cuaudit_site");
  return is_regular_file(dir + "/sitecustomize.py") ? dir : std::string();
}

namespace {

// In the child, before exec: the environment that loads cuaudit and tells it how to record.
void set_child_environment(const LaunchRequest& request) {
  setenv("CUDA_INJECTION64_PATH", request.injection_path.c_str(), 1);
  // NVTX-annotated pools (nvtxMemHeapRegister, ...) describe their blocks to the NVTX injection:
  // the same library. A tool the user named already (NVTX_INJECTION64_PATH) keeps them.
  if (const char* nvtx = getenv("NVTX_INJECTION64_PATH"); !nvtx || !*nvtx) {
    setenv("NVTX_INJECTION64_PATH", request.injection_path.c_str(), 1);
  }
  setenv(env_name(EnvVar::TraceDir), request.run_dir.c_str(), 1);
  if (request.record_call_sites) setenv(env_name(EnvVar::CheckApiResults), "1", 1);
  // This process is the run's root; cuaudit reports, so the injection must not.
  setenv(env_name(EnvVar::Launched), "1", 1);
  setenv(env_name(EnvVar::RootPid), std::to_string(getpid()).c_str(), 1);
  setenv(env_name(EnvVar::TargetProcesses), request.target_processes.c_str(), 1);
  setenv(env_name(EnvVar::SampleIntervalMs), std::to_string(request.sample_interval_ms).c_str(), 1);
  setenv(env_name(EnvVar::CheckLaunchParams), request.check_launch_params ? "1" : "0", 1);
  setenv(env_name(EnvVar::TrackResources), request.track_resources ? "1" : "0", 1);
  setenv(env_name(EnvVar::StackSampleBytes), std::to_string(request.stack_sample_bytes).c_str(), 1);
  setenv(env_name(EnvVar::StackExactBytes), std::to_string(request.stack_exact_bytes).c_str(), 1);
  if (request.torch_history_entries)  // the user's own setting stays
    setenv(env_name(EnvVar::TorchHistoryEntries), std::to_string(request.torch_history_entries).c_str(), 0);
  setenv(env_name(EnvVar::DeviceHeap), request.sanitizer_library.empty() ? "0" : "1", 1);
  if (!request.sanitizer_library.empty())
    setenv(env_name(EnvVar::SanitizerLibrary), request.sanitizer_library.c_str(), 1);
  if (!request.python_hooks_dir.empty()) {
    const char* existing = getenv("PYTHONPATH");
    const std::string path =
        existing && *existing ? request.python_hooks_dir + ":" + existing : request.python_hooks_dir;
    setenv("PYTHONPATH", path.c_str(), 1);
  }
  if (!request.preload_path.empty()) {
    // Ahead of what the user preloads, so that free() is checked before any other interposer.
    const char* existing = getenv("LD_PRELOAD");
    const std::string preload = existing && *existing ? request.preload_path + ":" + existing : request.preload_path;
    setenv("LD_PRELOAD", preload.c_str(), 1);
  }
}

// Passes on a stop cuaudit received: first the hooks write their files (the program may die of it
// before it could), then the program gets the signal. Returns whether it passed one on.
bool pass_on_stop(const LaunchRequest& request) {
  if (!request.signals) return false;
  const std::optional<int> sig = request.signals->take_pending();
  if (!sig) return false;
  if (request.before_passing_on) request.before_passing_on();
  request.signals->pass_on(*sig);
  return true;
}

// Waits for the program's end, in steps: a stop cuaudit received is passed on at once, and each
// periodic task (--snapshot-interval, --metrics) runs on a thread of its own when its interval has
// passed, one at a time: a snapshot of a long run takes seconds, and a stop must not wait for it
// (a CI runner's grace period would end first). Once a stop was passed on, no task starts again;
// the one in flight is waited for before the report.
int wait_for(pid_t pid, const LaunchRequest& request) {
  int status = 0;
  using Clock = std::chrono::steady_clock;
  std::vector<Clock::time_point> next;
  for (const auto& task : request.while_running)
    next.push_back(Clock::now() + std::chrono::milliseconds(task.interval_ms));
  std::thread worker;
  std::atomic<bool> busy{false};
  bool stopping = false;
  for (;;) {
    const pid_t done = waitpid(pid, &status, WNOHANG);
    if (done == pid || (done < 0 && errno != EINTR)) break;
    stopping |= pass_on_stop(request);
    auto pause = std::chrono::nanoseconds(std::chrono::milliseconds(20));
    for (size_t i = 0; i < next.size() && !stopping && !busy.load(); ++i) {
      const auto now = Clock::now();
      if (now < next[i]) {
        pause = std::min<std::chrono::nanoseconds>(pause, next[i] - now);
        continue;
      }
      if (worker.joinable()) worker.join();
      busy.store(true);
      worker = std::thread([&request, &busy, i, pid] {
        // Signals go to the launcher's thread, which passes them on; none interrupts the task's reads.
        sigset_t all;
        sigfillset(&all);
        pthread_sigmask(SIG_BLOCK, &all, nullptr);
        try {
          request.while_running[i].run(static_cast<uint64_t>(pid));
        } catch (const std::exception& e) {  // an interim report or a refresh lost, never the run
          std::cerr << "cuaudit: warning: " << e.what() << '\n';
        }
        busy.store(false);
      });
      next[i] = std::max(next[i] + std::chrono::milliseconds(request.while_running[i].interval_ms), Clock::now());
      break;  // then look at the program again before the next task
    }
    // A signal cuts the pause short (nanosleep, no SA_RESTART): a stop is passed on at once.
    const timespec ts{0, static_cast<long>(pause.count())};
    nanosleep(&ts, nullptr);
  }
  if (worker.joinable()) worker.join();
  return status;
}

// What the program left running when it ended. After a second stop (cuaudit killed the program)
// they are killed too, the whole tree, as the user asked: nothing is left behind then.
std::vector<uint64_t> processes_left_behind(bool kill_them) {
  reap_ended_children();
  std::vector<pid_t> left = live_descendants(getpid());
  if (kill_them && !left.empty()) {
    for (pid_t p : left) kill(p, SIGKILL);
    // Each becomes cuaudit's child once its parent is gone: reaped as they end (SIGKILL cannot be
    // refused; a process stuck in the kernel is left after 2 s rather than waited for forever).
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
    while (!left.empty() && std::chrono::steady_clock::now() < deadline) {
      const timespec pause{0, 10'000'000};
      nanosleep(&pause, nullptr);
      reap_ended_children();
      left = live_descendants(getpid());
    }
  }
  return {left.begin(), left.end()};
}

}  // namespace

RunInfo run_program(const LaunchRequest& request) {
  RunInfo info;
  info.command = request.argv;

  // The child reports a failed exec through this pipe; a successful exec closes it.
  int report_pipe[2];
  if (pipe2(report_pipe, O_CLOEXEC) != 0) {
    throw LaunchError(kExitToolFailure, fmt::format("cannot create a pipe: {}", strerror(errno)));
  }

  std::vector<char*> argv;
  for (const auto& arg : request.argv) argv.push_back(const_cast<char*>(arg.c_str()));
  argv.push_back(nullptr);

  // Orphans the program leaves (a worker in the background) become cuaudit's children, not init's:
  // they are found when it ends, and a second stop kills them too.
  become_subreaper();
  const bool own_group = program_in_own_group();
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid < 0) throw LaunchError(kExitToolFailure, fmt::format("cannot fork: {}", strerror(errno)));
  if (pid == 0) {
    if (own_group) enter_own_group(parent);
    if (request.signals) request.signals->restore_in_child();
    set_child_environment(request);
    execv(request.program_path.c_str(), argv.data());
    if (errno == ENOEXEC) {
      // An executable text file without `#!`: as shells (and execvp) do, /bin/sh runs it.
      std::vector<char*> shell = {const_cast<char*>("sh"), const_cast<char*>(request.program_path.c_str())};
      shell.insert(shell.end(), argv.begin() + 1, argv.end());
      execv("/bin/sh", shell.data());
      errno = ENOEXEC;
    }
    const int err = errno;
    ssize_t ignored = write(report_pipe[1], &err, sizeof err);
    (void)ignored;
    _exit(kExitNotExecutable);
  }
  if (own_group) setpgid(pid, pid);  // as the child does: whichever runs first
  if (request.signals) request.signals->forward_to(pid);
  close(report_pipe[1]);
  int exec_errno = 0;
  ssize_t got;
  while ((got = read(report_pipe[0], &exec_errno, sizeof exec_errno)) < 0 && errno == EINTR) {
  }
  close(report_pipe[0]);

  const int status = wait_for(pid, request);
  if (request.signals) {
    request.signals->program_ended();
    info.forwarded_signal = request.signals->forwarded();
    info.killed_after_signal = request.signals->killed_after();
  }

  if (got == static_cast<ssize_t>(sizeof exec_errno)) {
    throw LaunchError(exec_errno == ENOENT ? kExitNotFound : kExitNotExecutable,
                      fmt::format("cannot execute {}: {}", request.program_path, strerror(exec_errno)));
  }
  info.pid = static_cast<uint64_t>(pid);
  if (WIFEXITED(status)) info.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) info.signal = WTERMSIG(status);
  info.still_running = processes_left_behind(info.killed_after_signal.has_value());
  return info;
}

}  // namespace cuaudit
