// What a program leaves behind, found from /proc: children and their children, not the zombies.
#include <doctest/doctest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>

#include "descendants.h"

using namespace cuaudit;

TEST_CASE("live descendants: a child and its own child are found, an ended one is not") {
  int ready[2];
  REQUIRE(pipe(ready) == 0);
  const pid_t child = fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    const pid_t grandchild = fork();
    if (grandchild == 0) {
      pause();
      _exit(0);
    }
    (void)!write(ready[1], &grandchild, sizeof grandchild);
    pause();
    _exit(0);
  }
  pid_t grandchild = 0;
  REQUIRE(read(ready[0], &grandchild, sizeof grandchild) == static_cast<ssize_t>(sizeof grandchild));
  std::vector<pid_t> found = live_descendants(getpid());
  CHECK(std::count(found.begin(), found.end(), child) == 1);
  CHECK(std::count(found.begin(), found.end(), grandchild) == 1);
  // Parents come before their children.
  CHECK(std::find(found.begin(), found.end(), child) < std::find(found.begin(), found.end(), grandchild));
  kill(grandchild, SIGKILL);
  kill(child, SIGKILL);
  waitpid(child, nullptr, 0);
  found = live_descendants(getpid());
  CHECK(std::count(found.begin(), found.end(), child) == 0);
  close(ready[0]);
  close(ready[1]);
}
