// Servers a test program starts (snowidd, etcd, Redis, ZooKeeper, PostgreSQL,
// MariaDB) must not outlive it. Their owners stop them in destructors, which
// do not run when the test program dies: an abort, a fatal signal, or a
// sanitizer report with halt_on_error. So each owner also names its child
// here while it runs, and such a death kills every child still named
// (SIGKILL, by pid) before the program ends.
//
// Invariant: a pid is named from just after its spawn until just before the
// owner reaps it (a reaped pid may be reused by an unrelated process, so it
// must never stay named). Up to kMaxWatched children at once; beyond that a
// child is simply not guarded.
#pragma once

#include <sys/types.h>

namespace snowid::test {

inline constexpr int kMaxWatched = 256;

// Guards `pid` (installs the fatal-signal and sanitizer hooks on first use).
void watch_child(pid_t pid);
// Stops guarding `pid`; call before reaping it (or once a process that is
// not this program's child, such as a daemon, has been stopped).
void forget_child(pid_t pid);
// waitpid(pid, status, flags) for a watched child, flags 0 or WNOHANG: once
// the child has ended it is forgotten, then reaped. Returns what waitpid
// does: `pid` when reaped, 0 while it runs (WNOHANG), -1 on error.
pid_t reap_child(pid_t pid, int* status, int flags);

}  // namespace snowid::test
