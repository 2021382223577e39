#pragma once

#include <absl/synchronization/mutex.h>

namespace snowid {

// Turns off absl's lock-order checker for the process. gRPC's locks are
// absl::Mutex, and Debian's absl is built with that checker on: it records
// every pair of locks held together in one global graph, under a global
// lock, which cost about a tenth of the server CPU of a unary gRPC call. snowid's
// own locks are std::mutex and not covered by it; gRPC's lock order is
// gRPC's to test. Called first thing in main, before any gRPC object
// exists (the etcd client's channels included).
inline void disable_grpc_lock_order_checks() {
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
}

}  // namespace snowid
