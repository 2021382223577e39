// A loopback client socket that sends bytes no client library would send
// and collects what the server answers: the shared tool of the tests that
// speak HTTP, Thrift and RESP by hand.
#pragma once

#include <chrono>
#include <functional>
#include <string>
#include <string_view>

namespace snowid::test {

class RawSocket {
 public:
  // Connects to 127.0.0.1:`port`; connected() is false if that failed.
  // `receive_buffer`: as for connect_loopback (a small one keeps the kernel
  // from buffering much for a client that does not read).
  explicit RawSocket(int port, int receive_buffer = 0);
  ~RawSocket();
  RawSocket(const RawSocket&) = delete;
  RawSocket& operator=(const RawSocket&) = delete;

  bool connected() const { return fd_ >= 0; }
  // Sends all of `bytes`; false if the connection failed first.
  bool send(std::string_view bytes);
  void shutdown_write();  // shutdown(SHUT_WR): "no more requests"
  // Reads until `complete(received())` holds: true then; false if the
  // server closed the connection or `timeout` passed first.
  bool read_until(const std::function<bool(const std::string&)>& complete,
                  std::chrono::milliseconds timeout);
  // Reads until the server closes the connection (or resets it): true if it
  // does within `timeout`. What arrives meanwhile is kept in received().
  bool closed_by_peer(std::chrono::milliseconds timeout);
  // Everything read so far and not yet taken off by the caller.
  std::string& received() { return received_; }
  // Waits up to `timeout` for bytes: 1 if some were appended to received(),
  // 0 if the server closed or reset the connection, -1 if none came.
  int read_some(std::chrono::milliseconds timeout);

 private:
  int fd_ = -1;
  std::string received_;
};

}  // namespace snowid::test
