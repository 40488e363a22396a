#include "standalone_report.h"

#include <dlfcn.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "environment.h"
#include "in_target_log.h"

extern char** environ;
extern "C" int InitializeInjection(void);

namespace cuaudit::inject {
namespace {

bool g_root = false;
char g_dir[4096];

bool env_is(const char* name, const char* value) {
  const char* v = getenv(name);
  return v && strcmp(v, value) == 0;
}

// The cuaudit executable: CUAUDIT_TOOL_PATH, else beside this library.
bool find_tool(char* out, size_t size) {
  if (const char* explicit_path = getenv(env_name(EnvVar::ToolPath)); explicit_path && *explicit_path) {
    snprintf(out, size, "%s", explicit_path);
    return access(out, X_OK) == 0;
  }
  Dl_info info;
  if (!dladdr(reinterpret_cast<void*>(&InitializeInjection), &info) || !info.dli_fname) return false;
  const char* slash = strrchr(info.dli_fname, '/');
  const int dir_len = slash ? static_cast<int>(slash - info.dli_fname) : 1;
  snprintf(out, size, "%.*s/cuaudit", dir_len, slash ? info.dli_fname : ".");
  return access(out, X_OK) == 0;
}

}  // namespace

void adopt_run_as_root_if_standalone(const char* trace_dir) noexcept {
  if (getenv(env_name(EnvVar::Launched)) || getenv(env_name(EnvVar::RootPid))) return;
  g_root = true;
  snprintf(g_dir, sizeof g_dir, "%s", trace_dir);
  char pid[32];
  snprintf(pid, sizeof pid, "%ld", static_cast<long>(getpid()));
  // Children inherit these: one run directory, one report (this process's).
  setenv(env_name(EnvVar::RootPid), pid, 1);
  setenv(env_name(EnvVar::TraceDir), trace_dir, 1);
}

void report_at_exit_if_standalone() noexcept {
  if (!g_root || env_is(env_name(EnvVar::ReportAtExit), "0")) return;
  if (strtol(getenv(env_name(EnvVar::RootPid)) ? getenv(env_name(EnvVar::RootPid)) : "0", nullptr, 10) != getpid()) {
    return;  // a forked child of the root: the root reports
  }
  char tool[4096];
  if (!find_tool(tool, sizeof tool)) {
    log_warning("cannot find the cuaudit executable (set CUAUDIT_TOOL_PATH); analyze the run with: cuaudit report %s",
                g_dir);
    return;
  }
  // argv: cuaudit report DIR [--json FILE] [CUAUDIT_REPORT_ARGS...]
  static char args[4096];
  snprintf(args, sizeof args, "%s", getenv(env_name(EnvVar::ReportArgs)) ? getenv(env_name(EnvVar::ReportArgs)) : "");
  char* argv[64] = {tool, const_cast<char*>("report"), g_dir};
  int argc = 3;
  if (const char* json = getenv(env_name(EnvVar::Json)); json && *json) {
    argv[argc++] = const_cast<char*>("--json");
    argv[argc++] = const_cast<char*>(json);
  }
  char* save = nullptr;
  for (char* word = strtok_r(args, " \t", &save); word && argc < 63; word = strtok_r(nullptr, " \t", &save)) {
    argv[argc++] = word;
  }
  argv[argc] = nullptr;
  // The tool must not load cuaudit into itself.
  static char* env[1024];
  int envc = 0;
  for (char** e = environ; *e && envc < 1023; ++e) {
    if (strncmp(*e, "CUDA_INJECTION64_PATH=", 22) == 0 || strncmp(*e, "LD_PRELOAD=", 11) == 0) continue;
    env[envc++] = *e;
  }
  env[envc] = nullptr;
  pid_t pid;
  if (posix_spawn(&pid, tool, nullptr, nullptr, argv, env) != 0) {
    log_warning("cannot run %s; analyze the run with: cuaudit report %s", tool, g_dir);
    return;
  }
  int status;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
}

}  // namespace cuaudit::inject
