#include "toolkit_programs.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string_view>

#include <fmt/format.h>

extern char** environ;

namespace cuaudit {
namespace {

// nvdisasm's JSON for the largest cubins is some hundreds of MB; more is not a cubin's.
constexpr size_t kMaxOutputBytes = size_t{1} << 30;

}  // namespace

bool executable(const std::string& path) {
  struct stat st;
  return !path.empty() && stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && access(path.c_str(), X_OK) == 0;
}

bool capture_output(const std::vector<std::string>& argv, std::string& out, std::string& error,
                    const std::string& working_dir) {
  int out_pipe[2];
  if (pipe2(out_pipe, O_CLOEXEC) != 0) {
    error = fmt::format("cannot make a pipe: {}", strerror(errno));
    return false;
  }
  char err_path[] = "/tmp/cuaudit-nvdisasm-XXXXXX";
  const int err_fd = mkstemp(err_path);
  if (err_fd >= 0) unlink(err_path);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, out_pipe[1], STDOUT_FILENO);
  if (err_fd >= 0) posix_spawn_file_actions_adddup2(&actions, err_fd, STDERR_FILENO);
  if (!working_dir.empty()) posix_spawn_file_actions_addchdir_np(&actions, working_dir.c_str());
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = -1;
  const int rc = posix_spawn(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  close(out_pipe[1]);
  if (rc != 0) {
    close(out_pipe[0]);
    if (err_fd >= 0) close(err_fd);
    error = fmt::format("cannot run {}: {}", argv[0], strerror(rc));
    return false;
  }
  char buffer[1 << 16];
  bool too_large = false;
  for (;;) {
    const ssize_t n = read(out_pipe[0], buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    if (out.size() + static_cast<size_t>(n) > kMaxOutputBytes) {
      too_large = true;
      break;
    }
    out.append(buffer, static_cast<size_t>(n));
  }
  close(out_pipe[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  std::string said;
  if (err_fd >= 0) {
    said.resize(512);
    const ssize_t n = pread(err_fd, said.data(), said.size(), 0);
    said.resize(n > 0 ? static_cast<size_t>(n) : 0);
    close(err_fd);
    while (!said.empty() && (said.back() == '\n' || said.back() == ' ')) said.pop_back();
  }
  if (too_large) {
    error = fmt::format("{} printed more than {} bytes", argv[0], kMaxOutputBytes);
    return false;
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    error = fmt::format("{} failed ({}){}", argv[0],
                        WIFEXITED(status) ? fmt::format("exit status {}", WEXITSTATUS(status))
                                          : fmt::format("signal {}", WTERMSIG(status)),
                        said.empty() ? std::string() : ": " + said);
    return false;
  }
  return true;
}

std::string find_toolkit_program(const std::string& name, const std::string& beside) {
  std::vector<std::string> dirs;
  if (!beside.empty()) {
    dirs.push_back(beside.substr(0, beside.rfind('/') == std::string::npos ? 0 : beside.rfind('/')));
  } else {
    if (const char* env = getenv("CUAUDIT_NVDISASM"); env && *env) {
      const std::string path = env;
      if (name == "nvdisasm") return executable(path) ? path : std::string();
      dirs.push_back(path.substr(0, path.rfind('/') == std::string::npos ? 0 : path.rfind('/')));
    }
    if (const char* path = getenv("PATH")) {
      std::string_view rest = path;
      while (!rest.empty()) {
        const size_t colon = rest.find(':');
        if (colon != 0) dirs.emplace_back(rest.substr(0, colon));
        rest = colon == std::string_view::npos ? std::string_view() : rest.substr(colon + 1);
      }
    }
    if (const char* home = getenv("CUDA_HOME"); home && *home) dirs.push_back(std::string(home) + "/bin");
    dirs.push_back("/usr/local/cuda/bin");
  }
  for (const std::string& dir : dirs) {
    if (executable(dir + "/" + name)) return dir + "/" + name;
  }
  return {};
}

}  // namespace cuaudit
