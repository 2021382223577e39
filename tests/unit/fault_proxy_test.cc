// The fault proxy of the partition scenarios (tests/support/fault_proxy.h)
// between a RawSocket client and an echo server on loopback: each fault does
// what its scenarios rely on.
#include "fault_proxy.h"

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <thread>
#include <vector>

#include "raw_socket.h"

namespace snowid::test {
namespace {

using namespace std::chrono_literals;

// Echoes every byte back on loopback; counts connections and bytes.
class EchoServer {
 public:
  EchoServer() {
    listener_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t length = sizeof address;
    ::bind(listener_, reinterpret_cast<sockaddr*>(&address), length);
    ::listen(listener_, 16);
    ::getsockname(listener_, reinterpret_cast<sockaddr*>(&address), &length);
    port_ = ntohs(address.sin_port);
    thread_ = std::thread([this] { run(); });
  }
  ~EchoServer() {
    stopping_ = true;
    thread_.join();
    for (const pollfd& p : fds_) ::close(p.fd);
  }
  EchoServer(const EchoServer&) = delete;
  EchoServer& operator=(const EchoServer&) = delete;

  int port() const { return port_; }
  int connections() const { return connections_; }
  std::size_t received() const { return received_; }

 private:
  void run() {
    fds_.push_back({listener_, POLLIN, 0});
    while (!stopping_) {
      if (::poll(fds_.data(), fds_.size(), 10) <= 0) continue;
      for (std::size_t i = fds_.size(); i-- > 1;) {
        if (fds_[i].revents == 0) continue;
        std::array<char, 4096> buffer{};
        const ssize_t n = ::read(fds_[i].fd, buffer.data(), buffer.size());
        if (n <= 0) {
          ::close(fds_[i].fd);
          fds_.erase(fds_.begin() + static_cast<std::ptrdiff_t>(i));
          continue;
        }
        received_ += static_cast<std::size_t>(n);
        (void)!::write(fds_[i].fd, buffer.data(), static_cast<std::size_t>(n));
      }
      if ((fds_[0].revents & POLLIN) != 0) {
        fds_.push_back({::accept4(listener_, nullptr, nullptr, SOCK_CLOEXEC), POLLIN, 0});
        ++connections_;
      }
    }
  }

  int listener_ = -1;
  int port_ = 0;
  std::vector<pollfd> fds_;
  std::atomic<int> connections_{0};
  std::atomic<std::size_t> received_{0};
  std::atomic<bool> stopping_{false};
  std::thread thread_;
};

// Sends `bytes` and waits up to `limit` for as many back.
bool round_trip(RawSocket& client, const std::string& bytes, std::chrono::milliseconds limit) {
  client.received().clear();
  return client.send(bytes) &&
         client.read_until([&](const std::string& got) { return got.size() >= bytes.size(); },
                           limit);
}

// The proxy counts a byte just after relaying it: the client may read it first.
FaultProxy::Stats settled_stats(const FaultProxy& proxy) {
  std::this_thread::sleep_for(50ms);
  return proxy.stats();
}

// A client connected through a proxy to an echo server, its link tried once.
class FaultProxyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(round_trip(client, "ping", 2s));
    EXPECT_EQ(client.received(), "ping");
  }

  EchoServer echo;
  FaultProxy proxy{echo.port()};
  RawSocket client{proxy.port()};
};

TEST_F(FaultProxyTest, PassRelaysBothWays) {
  const FaultProxy::Stats stats = settled_stats(proxy);
  EXPECT_EQ(stats.relayed_requests, 4u);
  EXPECT_EQ(stats.relayed_answers, 4u);
}

TEST_F(FaultProxyTest, BlackholeDropsBytesKeepsSocketsOpenAndHoldsNewConnections) {
  proxy.blackhole();
  EXPECT_FALSE(round_trip(client, "lost", 300ms));
  EXPECT_EQ(client.read_some(100ms), -1) << "the connection was closed";
  RawSocket newcomer(proxy.port());
  ASSERT_TRUE(newcomer.connected());
  EXPECT_FALSE(round_trip(newcomer, "hello", 300ms));
  EXPECT_EQ(echo.connections(), 1) << "a connection made during the blackhole reached the server";
  EXPECT_EQ(echo.received(), 4u);
  EXPECT_EQ(settled_stats(proxy).dropped_requests, 9u);

  proxy.pass();
  EXPECT_TRUE(round_trip(client, "back", 2s));
  EXPECT_TRUE(round_trip(newcomer, "later", 2s));
  EXPECT_EQ(echo.connections(), 2);
}

TEST_F(FaultProxyTest, OneWayBlackholeDropsOnlyThatWay) {
  proxy.blackhole(FaultProxy::Flow::kAnswers);
  EXPECT_FALSE(round_trip(client, "request", 300ms));
  EXPECT_EQ(echo.received(), 4u + 7u) << "the request did not reach the server";
  EXPECT_EQ(settled_stats(proxy).dropped_answers, 7u);

  proxy.blackhole(FaultProxy::Flow::kRequests);
  EXPECT_FALSE(round_trip(client, "again", 300ms));
  EXPECT_EQ(echo.received(), 11u) << "a request passed";
}

TEST_F(FaultProxyTest, DelayHoldsEachWayForItsTime) {
  proxy.delay(100ms);
  const auto sent = std::chrono::steady_clock::now();
  ASSERT_TRUE(round_trip(client, "slow", 2s));
  const auto took = std::chrono::steady_clock::now() - sent;
  EXPECT_GE(took, 200ms);
  EXPECT_LT(took, 1s);
  EXPECT_EQ(client.received(), "slow");
}

TEST_F(FaultProxyTest, ResetResetsOpenAndNewConnections) {
  proxy.reset();
  EXPECT_EQ(client.read_some(1s), 0) << "the open connection was not reset";
  RawSocket newcomer(proxy.port());
  EXPECT_EQ(newcomer.read_some(1s), 0) << "a new connection was not reset";
  EXPECT_EQ(settled_stats(proxy).resets, 2u);
  proxy.pass();
  RawSocket after(proxy.port());
  EXPECT_TRUE(round_trip(after, "ok", 2s));
}

TEST_F(FaultProxyTest, Http2OnlyResetsNewConnectionsThatDoNotSpeakIt) {
  proxy.http2_only();
  RawSocket http1(proxy.port());
  ASSERT_TRUE(http1.send("GET /version HTTP/1.1\r\nHost: x\r\n\r\n"));
  EXPECT_EQ(http1.read_some(1s), 0) << "an HTTP/1.1 request was not reset";
  RawSocket http2(proxy.port());
  EXPECT_TRUE(round_trip(http2, "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", 2s));
  EXPECT_TRUE(round_trip(client, "GET / HTTP/1.1\r\n", 2s)) << "an open connection was judged";
  EXPECT_EQ(echo.received(), 4u + 24u + 16u) << "the HTTP/1.1 request reached the server";
  EXPECT_EQ(settled_stats(proxy).resets, 1u);
}

TEST(FaultProxy, ConnectDelayHoldsANewConnection) {
  EchoServer echo;
  FaultProxy proxy(echo.port(), 300ms);
  const auto began = std::chrono::steady_clock::now();
  RawSocket client(proxy.port());
  ASSERT_TRUE(round_trip(client, "ping", 2s));
  EXPECT_GE(std::chrono::steady_clock::now() - began, 300ms);
}

}  // namespace
}  // namespace snowid::test
