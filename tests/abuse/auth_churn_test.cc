// Connections that never authenticate, opened from six threads as fast as
// they can against the real snowidd's RESP and Thrift listeners (a bearer
// token set, 100 connections at most, so 10 for unauthenticated ones),
// while real clients that authenticate in their first request (hiredis; the
// C++ client thrift-compiler generates) connect one after another: each
// must get an ID within a second (stream_server.h, unauthenticated_share.h).
//
// Before: the churn kept the unauthenticated share full, and a new client,
// unauthenticated too until its AUTH was read, was refused ("max number of
// clients reached"): 0 of 120 were served. Now a new connection closes the
// oldest unauthenticated one that had its chance, and one whose AUTH is
// already waiting is closed last.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <hiredis/hiredis.h>
#include <sys/socket.h>
#include <thrift/protocol/TBinaryProtocol.h>
#include <thrift/transport/TBufferTransports.h>
#include <thrift/transport/TSocket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <deque>
#include <functional>
#include <iostream>
#include <map>
#include <sstream>
#include <thread>

#include "Snowflake.h"
#include "abuse_server.h"

namespace snowid {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

constexpr const char* kToken = "s3cret";
constexpr int kMaxConnections = 100;
// Connections each churning thread keeps open: together far more than the
// unauthenticated share (10).
constexpr std::size_t kHeldPerThread = 16;
constexpr int kClients = 120;
// Under a sanitizer snowidd takes several times longer per connection, and
// six threads keep the kernel's listen queue full whatever it admits: there,
// two threads, 3 s a client, 95 % served.
constexpr int kChurnThreads = test::kSanitized ? 2 : 6;
constexpr milliseconds kServedWithin{test::kSanitized ? 3000 : 1000};
constexpr int kMustBeServed = test::kSanitized ? kClients * 95 / 100 : kClients - 1;

// Opens connections to a port from kChurnThreads threads as fast as it can,
// none of them ever authenticating, until stop(): each thread keeps its last
// kHeldPerThread connections open and closes the oldest as it opens one
// more. Odd threads send `greeting` on each connection, even ones nothing.
class UnauthenticatedChurn {
 public:
  UnauthenticatedChurn(int port, std::string greeting) : port_(port), greeting_(greeting) {
    for (int i = 0; i < kChurnThreads; ++i) threads_.emplace_back([this, i] { run(i % 2 == 1); });
  }
  ~UnauthenticatedChurn() { stop(); }

  // Stops the threads (closing their connections); the connections opened.
  std::uint64_t stop() {
    stop_ = true;
    for (auto& thread : threads_) {
      if (thread.joinable()) thread.join();
    }
    return opened_.load();
  }

 private:
  void run(bool greet) {
    std::deque<int> held;
    while (!stop_.load()) {
      const int fd = test::connect_loopback(port_);
      if (fd < 0) continue;
      opened_.fetch_add(1);
      if (greet) (void)::send(fd, greeting_.data(), greeting_.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
      held.push_back(fd);
      if (held.size() > kHeldPerThread) {
        ::close(held.front());
        held.pop_front();
      }
    }
    for (int fd : held) ::close(fd);
  }

  const int port_;
  const std::string greeting_;
  std::atomic<bool> stop_{false};
  std::atomic<std::uint64_t> opened_{0};
  std::vector<std::thread> threads_;
};

// Connections this machine's kernel dropped because a listen queue was
// full (TcpExt ListenOverflows; 0 if unknown): a client whose connection is
// dropped retries after a second, whatever the server admits.
long listen_overflows() {
  std::istringstream netstat(test::read_file("/proc/net/netstat"));
  std::string names, values;
  while (std::getline(netstat, names) && std::getline(netstat, values)) {
    if (names.rfind("TcpExt:", 0) != 0) continue;
    std::istringstream name_words(names), value_words(values);
    std::string name, value;
    while (name_words >> name && value_words >> value) {
      if (name == "ListenOverflows") return std::stol(value);
    }
  }
  return 0;
}

// What the clients got.
struct Served {
  int count = 0;
  std::vector<milliseconds> latencies;  // of those served, sorted
  std::map<std::string, int> failures;  // how many were not served, by why
};

// Runs kClients clients one after another (`client` returns "" when it got
// an ID, else why not), while the churn runs.
Served run_clients(const std::function<std::string()>& client) {
  Served served;
  for (int i = 0; i < kClients; ++i) {
    const auto begin = Clock::now();
    const std::string failure = client();
    const auto took = std::chrono::duration_cast<milliseconds>(Clock::now() - begin);
    if (failure.empty() && took <= kServedWithin) {
      ++served.count;
      served.latencies.push_back(took);
    } else {
      ++served.failures[failure.empty() ? "served too late" : failure];
    }
    std::this_thread::sleep_for(milliseconds{20});
  }
  std::sort(served.latencies.begin(), served.latencies.end());
  return served;
}

std::string failures_text(const Served& served) {
  std::string text;
  for (const auto& [why, count] : served.failures) {
    text += "\n  " + std::to_string(count) + " x " + why;
  }
  return text;
}

// Prints what the clients got and what the churn did.
void report(const std::string& protocol, const Served& served, std::uint64_t opened,
            milliseconds elapsed, const std::string& metrics) {
  const auto latency = [&](double q) {
    if (served.latencies.empty()) return std::int64_t{-1};
    const auto last = static_cast<double>(served.latencies.size() - 1);
    return static_cast<std::int64_t>(served.latencies[static_cast<std::size_t>(q * last)].count());
  };
  const auto per_second =
      opened * 1000 / static_cast<std::uint64_t>(std::max<std::int64_t>(1, elapsed.count()));
  std::cout << protocol << ": " << served.count << " of " << kClients
            << " AUTH-first clients served (p50 " << latency(0.5) << " ms, max " << latency(1.0)
            << " ms) while " << opened << " unauthenticated connections were opened in "
            << elapsed.count() << " ms (" << per_second << " a second); " << metrics
            << failures_text(served) << std::endl;
}

// One hiredis client: connects, AUTH, SNOWID.ID, each within kServedWithin;
// "" if it got an ID.
std::string hiredis_client(int port) {
  const timeval limit{static_cast<time_t>(kServedWithin.count() / 1000), 0};
  redisContext* context = redisConnectWithTimeout("127.0.0.1", port, limit);
  if (context == nullptr) return "no context";
  std::unique_ptr<redisContext, void (*)(redisContext*)> owned(context, redisFree);
  if (context->err != 0) return std::string("connect: ") + context->errstr;
  redisSetTimeout(context, limit);
  std::string outcome;
  for (const char* command : {"AUTH s3cret", "SNOWID.ID"}) {
    auto* reply = static_cast<redisReply*>(redisCommand(context, command));
    if (reply == nullptr) return std::string(command) + ": " + context->errstr;
    const bool ok = reply->type == REDIS_REPLY_STATUS || reply->type == REDIS_REPLY_STRING;
    outcome = std::string(command) + ": " + std::string(reply->str ? reply->str : "", reply->len);
    freeReplyObject(reply);
    if (!ok) return outcome;
  }
  return "";
}

// A framed call of `method` without arguments (binary protocol, strict).
std::string framed_call(const std::string& method) {
  const auto be32 = [](std::uint32_t n) {
    return std::string{static_cast<char>(n >> 24), static_cast<char>(n >> 16),
                       static_cast<char>(n >> 8), static_cast<char>(n)};
  };
  const std::string call = be32(0x80010001u) + be32(static_cast<std::uint32_t>(method.size())) +
                           method + be32(1) + std::string(1, '\0');
  return be32(static_cast<std::uint32_t>(call.size())) + call;
}

// One client of the generated C++ Thrift client: authenticate, get_id.
std::string thrift_client(int port) {
  namespace transport = apache::thrift::transport;
  namespace protocol = apache::thrift::protocol;
  auto socket = std::make_shared<transport::TSocket>("127.0.0.1", port);
  socket->setConnTimeout(static_cast<int>(kServedWithin.count()));
  socket->setRecvTimeout(static_cast<int>(kServedWithin.count()));
  socket->setSendTimeout(static_cast<int>(kServedWithin.count()));
  auto framed = std::make_shared<transport::TFramedTransport>(socket);
  thrift::SnowflakeClient client(std::make_shared<protocol::TBinaryProtocol>(framed));
  try {
    framed->open();
    client.authenticate(kToken);
    if (client.get_id("churn-test") <= 0) return "get_id: not an ID";
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

class AuthChurnTest : public test::AbuseTest {
 protected:
  // Runs the churn with `greeting` against `listener`'s port and the
  // clients; expects kMustBeServed of them served.
  void expect_served_under_churn(const std::string& listener, const std::string& greeting,
                                 const std::function<std::string(int)>& client) {
    const int listener_port = server().listener_port(listener);
    ASSERT_GT(listener_port, 0) << server().log();
    const auto begin = Clock::now();
    const long overflows_before = listen_overflows();
    UnauthenticatedChurn churn(listener_port, greeting);
    std::this_thread::sleep_for(milliseconds{300});  // the share is full by now
    const Served served = run_clients([&] { return client(listener_port); });
    const std::uint64_t opened = churn.stop();
    const auto elapsed = std::chrono::duration_cast<milliseconds>(Clock::now() - begin);
    const std::string prefix = "snowid_" + listener + "_";
    const double evicted = test::metric(port(), prefix + "evicted_unauthenticated_total");
    const double refused = test::metric(port(), prefix + "refused_unauthenticated_total");
    const double at_limit = test::metric(port(), prefix + "refused_connections_total");
    report(
        listener, served, opened, elapsed,
        fmt::format("{} closed to make room, {} refused, {} refused at {}_max_connections; "
                    "{} connections dropped by the kernel, its listen queue full",
                    evicted, refused, at_limit, listener, listen_overflows() - overflows_before));
    EXPECT_GE(served.count, kMustBeServed) << failures_text(served);
    // The churn did fill the share: connections were closed to make room.
    EXPECT_GT(evicted, kClients);
    // Nothing unauthenticated outlives the churn for long.
    EXPECT_TRUE(test::wait_until(
        [&] {
          return test::metric(port(), "snowid_" + listener + "_unauthenticated_connections") == 0;
        },
        std::chrono::seconds{8}));
  }
};

TEST_F(AuthChurnTest, RespClientsThatAuthFirstAreServedWhileUnauthenticatedConnectionsChurn) {
  start({"--resp", "127.0.0.1:0", "--bearer-token", kToken, "--resp-max-connections",
         std::to_string(kMaxConnections)});
  expect_served_under_churn("resp", "PING\r\n", hiredis_client);
}

TEST_F(AuthChurnTest, ThriftClientsThatAuthenticateFirstAreServedWhileConnectionsChurn) {
  start({"--thrift", "127.0.0.1:0", "--bearer-token", kToken, "--thrift-trusted-networks",
         "10.255.255.0/24", "--thrift-max-connections", std::to_string(kMaxConnections)});
  // A get_worker_id call, answered "Unauthenticated", which spends the
  // connection's chance.
  expect_served_under_churn("thrift", framed_call("get_worker_id"), thrift_client);
}

}  // namespace
}  // namespace snowid
