#include "raw_socket.h"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>

#include "subprocess.h"

namespace snowid::test {
namespace {

std::chrono::milliseconds left_until(std::chrono::steady_clock::time_point deadline) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(deadline -
                                                               std::chrono::steady_clock::now());
}

}  // namespace

RawSocket::RawSocket(int port, int receive_buffer) : fd_(connect_loopback(port, receive_buffer)) {}

RawSocket::~RawSocket() {
  if (fd_ >= 0) ::close(fd_);
}

bool RawSocket::send(std::string_view bytes) {
  std::size_t done = 0;
  while (fd_ >= 0 && done < bytes.size()) {
    const ssize_t n = ::send(fd_, bytes.data() + done, bytes.size() - done, MSG_NOSIGNAL);
    if (n <= 0) return false;
    done += static_cast<std::size_t>(n);
  }
  return fd_ >= 0;
}

void RawSocket::shutdown_write() {
  if (fd_ >= 0) ::shutdown(fd_, SHUT_WR);
}

int RawSocket::read_some(std::chrono::milliseconds timeout) {
  if (fd_ < 0) return -1;
  pollfd p{fd_, POLLIN, 0};
  if (::poll(&p, 1, static_cast<int>(std::max<std::int64_t>(0, timeout.count()))) <= 0) return -1;
  char buffer[65536];
  const ssize_t n = ::recv(fd_, buffer, sizeof buffer, 0);
  if (n <= 0) return 0;
  received_.append(buffer, static_cast<std::size_t>(n));
  return 1;
}

bool RawSocket::read_until(const std::function<bool(const std::string&)>& complete,
                           std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!complete(received_)) {
    const auto left = left_until(deadline);
    if (left.count() <= 0 || read_some(left) != 1) return false;
  }
  return true;
}

bool RawSocket::closed_by_peer(std::chrono::milliseconds timeout) {
  if (fd_ < 0) return false;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    const auto left = left_until(deadline);
    if (left.count() <= 0) return false;
    const int got = read_some(left);
    if (got == 0) return true;
    if (got < 0) return false;
  }
}

}  // namespace snowid::test
