#include "descendants.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>

#include "exit_codes.h"

namespace cuaudit {
namespace {

// parent pid -> pid of every live process (zombies left out: they have ended).
std::multimap<pid_t, pid_t> children_by_parent() {
  std::multimap<pid_t, pid_t> children;
  DIR* proc = opendir("/proc");
  if (!proc) return children;
  while (const dirent* entry = readdir(proc)) {
    char* end = nullptr;
    const long pid = strtol(entry->d_name, &end, 10);
    if (pid <= 0 || *end != '\0') continue;
    FILE* f = fopen(("/proc/" + std::string(entry->d_name) + "/stat").c_str(), "r");
    if (!f) continue;  // ended meanwhile
    char line[1024];
    const size_t n = fread(line, 1, sizeof line - 1, f);
    fclose(f);
    line[n] = '\0';
    // "pid (comm) state ppid ...": comm may hold spaces and parentheses, so read after the last ')'.
    const char* after = strrchr(line, ')');
    char state = 0;
    long ppid = 0;
    if (!after || sscanf(after + 1, " %c %ld", &state, &ppid) != 2 || state == 'Z' || state == 'X') continue;
    children.emplace(static_cast<pid_t>(ppid), static_cast<pid_t>(pid));
  }
  closedir(proc);
  return children;
}

}  // namespace

bool become_subreaper() { return prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0; }

std::vector<pid_t> live_descendants(pid_t root) {
  const std::multimap<pid_t, pid_t> children = children_by_parent();
  std::vector<pid_t> out;
  const auto add_children = [&](pid_t parent) {
    const auto [first, last] = children.equal_range(parent);
    for (auto it = first; it != last; ++it) out.push_back(it->second);
  };
  add_children(root);
  for (size_t next = 0; next < out.size(); ++next) add_children(out[next]);  // breadth first: nearest first
  return out;
}

void reap_ended_children() {
  int status;
  while (waitpid(-1, &status, WNOHANG) > 0) {
  }
}

bool program_in_own_group() {
  const int tty = open("/dev/tty", O_RDONLY | O_NOCTTY | O_CLOEXEC);
  if (tty < 0) return true;  // ENXIO: no controlling terminal
  close(tty);
  return false;
}

void enter_own_group(pid_t parent) {
  setpgid(0, 0);
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != parent) _exit(kExitToolFailure);  // cuaudit ended before the line above
}

}  // namespace cuaudit
