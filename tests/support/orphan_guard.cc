#include "orphan_guard.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <mutex>

// Present when the program is built with a sanitizer: called on every
// sanitizer-reported death, before the program exits.
extern "C" void __sanitizer_set_death_callback(void (*callback)(void)) __attribute__((weak));

namespace snowid::test {
namespace {

// 0: a free slot. Read by the death hooks without a lock: atomics only.
std::atomic<pid_t> g_watched[kMaxWatched];
// The process that named them: a forked copy (a death test, a child before
// its exec) inherits the table but must not kill its parent's children.
std::atomic<pid_t> g_owner{0};

void kill_watched() {
  if (::getpid() != g_owner.load()) return;
  for (auto& slot : g_watched) {
    const pid_t pid = slot.exchange(0);
    if (pid > 0) ::kill(pid, SIGKILL);
  }
}

void on_fatal_signal(int sig) {
  kill_watched();
  // Back to the default action (SA_RESETHAND did so already, but a
  // sanitizer's signal emulation may not), then end the program as the
  // signal would have.
  struct sigaction fallback {};
  fallback.sa_handler = SIG_DFL;
  sigemptyset(&fallback.sa_mask);
  ::sigaction(sig, &fallback, nullptr);
  ::raise(sig);
}

void install_hooks() {
  g_owner.store(::getpid());
  // Signals whose default action ends the program and that nothing else
  // handles yet: a sanitizer's own SIGSEGV handler is left alone (its
  // report ends in the death callback below).
  for (const int sig : {SIGABRT, SIGSEGV, SIGBUS, SIGILL, SIGFPE}) {
    struct sigaction old {};
    if (::sigaction(sig, nullptr, &old) != 0 || old.sa_handler != SIG_DFL) continue;
    struct sigaction action {};
    action.sa_handler = on_fatal_signal;
    action.sa_flags = static_cast<int>(SA_RESETHAND | SA_NODEFER);
    sigemptyset(&action.sa_mask);
    ::sigaction(sig, &action, nullptr);
  }
  if (__sanitizer_set_death_callback != nullptr) __sanitizer_set_death_callback(kill_watched);
}

}  // namespace

void watch_child(pid_t pid) {
  static std::once_flag hooks;
  std::call_once(hooks, install_hooks);
  for (auto& slot : g_watched) {
    pid_t free = 0;
    if (slot.compare_exchange_strong(free, pid)) return;
  }
}

void forget_child(pid_t pid) {
  for (auto& slot : g_watched) {
    pid_t named = pid;
    if (slot.compare_exchange_strong(named, 0)) return;
  }
}

pid_t reap_child(pid_t pid, int* status, int flags) {
  // Look without reaping, so the pid cannot be reused while still named.
  siginfo_t info{};
  if (::waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOWAIT | flags) != 0) return -1;
  if (info.si_pid == 0) return 0;  // still running (WNOHANG)
  forget_child(pid);
  return ::waitpid(pid, status, 0);
}

}  // namespace snowid::test
