#include "slow_link.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>

#include "subprocess.h"

namespace snowid::test {

namespace {

// Copies what is readable on `from` to `to`; false once `from` ends or fails.
bool pass_on(int from, int to) {
  std::array<char, 16384> buffer{};
  const ssize_t n = ::read(from, buffer.data(), buffer.size());
  if (n <= 0) return false;
  ssize_t sent = 0;
  while (sent < n) {
    const ssize_t w = ::write(to, buffer.data() + sent, static_cast<std::size_t>(n - sent));
    if (w <= 0) return false;
    sent += w;
  }
  return true;
}

}  // namespace

SlowLink::SlowLink(int target_port, std::chrono::milliseconds connect_delay)
    : target_port_(target_port), connect_delay_(connect_delay) {
  listener_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof address;
  if (listener_ < 0 || ::bind(listener_, reinterpret_cast<sockaddr*>(&address), length) != 0 ||
      ::listen(listener_, 16) != 0 ||
      ::getsockname(listener_, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
    return;
  }
  port_ = ntohs(address.sin_port);
  acceptor_ = std::thread([this] { accept_loop(); });
}

SlowLink::~SlowLink() {
  stopping_ = true;
  if (acceptor_.joinable()) acceptor_.join();
  for (auto& relay : relays_) relay.join();
  if (listener_ >= 0) ::close(listener_);
}

void SlowLink::accept_loop() {
  while (!stopping_) {
    pollfd ready{listener_, POLLIN, 0};
    if (::poll(&ready, 1, 50) <= 0) continue;
    const int client = ::accept4(listener_, nullptr, nullptr, SOCK_CLOEXEC);
    if (client < 0) continue;
    std::lock_guard lock(mutex_);
    relays_.emplace_back([this, client] { relay(client); });
  }
}

// Holds the connection for connect_delay_ (checking for the end every 50
// ms), then relays until either side closes or the link stops.
void SlowLink::relay(int client) {
  const auto until = std::chrono::steady_clock::now() + connect_delay_;
  while (!stopping_ && std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds{50});
  }
  const int target = stopping_ ? -1 : connect_loopback(target_port_);
  while (target >= 0 && !stopping_) {
    std::array<pollfd, 2> fds{pollfd{client, POLLIN, 0}, pollfd{target, POLLIN, 0}};
    if (::poll(fds.data(), fds.size(), 50) < 0) break;
    if ((fds[0].revents & (POLLIN | POLLHUP | POLLERR)) != 0 && !pass_on(client, target)) break;
    if ((fds[1].revents & (POLLIN | POLLHUP | POLLERR)) != 0 && !pass_on(target, client)) break;
  }
  if (target >= 0) ::close(target);
  ::close(client);
}

}  // namespace snowid::test
