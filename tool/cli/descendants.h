// The processes a program left behind: a worker started in the background, a daemonized helper.
// cuaudit is their child subreaper (PR_SET_CHILD_SUBREAPER, as init systems and tini are), so those
// whose parent ended become its children instead of init's, and it can find, reap and (when a
// second stop says so) kill them.
#pragma once

#include <sys/types.h>

#include <vector>

namespace cuaudit {

// Makes the calling process the subreaper of its descendants (Linux 3.4 on; false where refused).
bool become_subreaper();

// Every live (not zombie) descendant of `root`, from /proc (its stat files: /proc/PID/task/TID/children
// needs a kernel option not every kernel or container runtime has), nearest first.
std::vector<pid_t> live_descendants(pid_t root);

// Waits for every child that has ended already (zombies of orphans reparented to cuaudit).
void reap_ended_children();

}  // namespace cuaudit
