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

// Whether the program runs in a process group of its own: where cuaudit has no controlling
// terminal (a CI runner, a batch job, a service). A stop sent to cuaudit's group (GitLab's cancel,
// `kill -- -PGID`, timeout(1)'s second send) then reaches cuaudit alone, which passes it on once;
// in the program's group too it would reach the program twice (the reliability review of
// 2026-12-04, F4), and a program that cleans up on the first stop gives up on the second. With a
// terminal the program stays in cuaudit's group, where job control (Ctrl-C, Ctrl-Z) reaches both
// and cuaudit does not pass on what the terminal sent.
bool program_in_own_group();

// In the forked child, before exec: a process group of its own, and death with cuaudit (SIGKILL
// when `parent` ends), since a stop to cuaudit's group no longer reaches it. PR_SET_PDEATHSIG
// follows the thread that forked: fork on cuaudit's main thread (run_program does).
void enter_own_group(pid_t parent);

}  // namespace cuaudit
