// A TCP proxy on 127.0.0.1 between a client (a snowidd node) and a server
// (etcd, Redis, ZooKeeper, PostgreSQL) whose link a test can break while it
// is in use: the network faults of the partition scenarios (tests/chaos).
//
// Faults, each for one way of the link or both ("requests" flow from the
// client to the server, "answers" back):
//   pass      bytes are relayed as they come;
//   blackhole bytes are read and dropped while every socket stays open, as
//             behind a firewall that silently drops packets: neither side
//             sees an error, a close sent that way is dropped too, and a new
//             connection is accepted but never reaches the server (its
//             handshake could not complete) until the link passes again;
//   delay     bytes, and a close, are relayed `by` later, in order;
//   reset     (both ways) every open connection is closed with a TCP reset on
//             both sides, and every new one is reset as soon as accepted;
//   http2 only  a new connection whose first bytes are not HTTP/2's client
//             preface is reset before anything reaches the server: a proxy
//             that carries gRPC but not HTTP/1.1 (etcd's clock, read with GET
//             /version, cannot be read through it). Connections open when it
//             is set are not judged.
// A connection can also be held for `connect_delay` before it is relayed at
// all (a server slow to connect to). retarget() sends new connections to
// another server, as a virtual IP moves to a promoted replica.
//
// Deterministic: one thread relays every connection with poll(), nothing is
// random, and set_*() returns only once that thread applied the new fault:
// every byte the proxy reads afterwards is handled under it, and bytes it had
// queued for a way that now drops them are dropped. Bounded: at most
// kMaxConnections at once (more are reset), at most kMaxQueued bytes queued
// per way of a connection (beyond that the proxy stops reading that side).
// Kill-free: it lives in the test process; the destructor closes every
// socket and joins the thread.
//
// Thread-safety: the setters, stats() and port() may be called from any
// thread; construct and destroy from one.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>

namespace snowid::test {

class FaultProxy {
 public:
  static constexpr int kMaxConnections = 64;
  static constexpr std::size_t kMaxQueued = std::size_t{1} << 20;

  // Which way of the link a fault applies to.
  enum class Flow : std::uint8_t {
    kBoth,
    kRequests,  // client to server only
    kAnswers,   // server to client only
  };

  struct Stats {
    std::uint64_t connections = 0;  // accepted
    // connections reset (reset(), over kMaxConnections, or not HTTP/2 under http2_only())
    std::uint64_t resets = 0;
    std::uint64_t relayed_requests = 0, relayed_answers = 0;  // bytes
    std::uint64_t dropped_requests = 0, dropped_answers = 0;  // bytes
  };

  // Listens on a free loopback port and relays to 127.0.0.1:`target_port`.
  explicit FaultProxy(int target_port,
                      std::chrono::milliseconds connect_delay = std::chrono::milliseconds{0});
  ~FaultProxy();
  FaultProxy(const FaultProxy&) = delete;
  FaultProxy& operator=(const FaultProxy&) = delete;

  int port() const { return port_; }  // 0 if it could not listen
  std::string endpoint() const { return "127.0.0.1:" + std::to_string(port_); }

  void pass();
  void blackhole(Flow flow = Flow::kBoth);
  void delay(std::chrono::milliseconds by, Flow flow = Flow::kBoth);
  void reset();
  // Relays new connections only if they speak HTTP/2 (gRPC); pass() ends it.
  void http2_only();
  // Connections made from now on go to 127.0.0.1:`target_port`; open ones stay.
  void retarget(int target_port) { target_port_ = target_port; }

  Stats stats() const;

  // What one way of the link does now (fault_proxy.cc).
  struct Way {
    enum class Kind : std::uint8_t { kPass, kDrop, kDelay } kind = Kind::kPass;
    std::chrono::milliseconds delay{0};
  };
  struct Fault {
    Way requests, answers;
    bool reset = false;
    bool http2_only = false;
  };

 private:
  class Relay;  // the thread's state (fault_proxy.cc)

  void set(const Fault& fault);
  void run();

  std::atomic<int> target_port_;
  const std::chrono::milliseconds connect_delay_;
  int listener_ = -1;
  int port_ = 0;

  mutable std::mutex mutex_;
  std::condition_variable applied_;
  Fault fault_;                      // guarded by mutex_
  std::uint64_t fault_epoch_ = 0;    // guarded by mutex_: bumped by set()
  std::uint64_t applied_epoch_ = 0;  // guarded by mutex_: the last the thread applied
  Stats stats_;                      // guarded by mutex_: counted by the thread as it goes

  std::atomic<bool> stopping_{false};
  std::thread thread_;  // last: starts once the fields above exist
};

}  // namespace snowid::test
