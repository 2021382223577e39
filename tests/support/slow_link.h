// A TCP relay on 127.0.0.1 that holds every new connection for a while
// before relaying it to a target port: a member that is slow to connect to
// (a distant data centre, an overloaded host), as seen by a client's
// connection set-up. Once relayed, bytes pass at once both ways.
//
// Thread-safety: construct and destroy from one thread; the relay's own
// threads end before the destructor returns.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace snowid::test {

class SlowLink {
 public:
  SlowLink(int target_port, std::chrono::milliseconds connect_delay);
  ~SlowLink();
  SlowLink(const SlowLink&) = delete;
  SlowLink& operator=(const SlowLink&) = delete;

  int port() const { return port_; }  // 0 if it could not listen

 private:
  void accept_loop();
  void relay(int client);

  const int target_port_;
  const std::chrono::milliseconds connect_delay_;
  int listener_ = -1;
  int port_ = 0;
  std::atomic<bool> stopping_{false};
  std::mutex mutex_;
  std::vector<std::thread> relays_;
  std::thread acceptor_;
};

}  // namespace snowid::test
