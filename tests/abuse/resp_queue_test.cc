// MULTI queues against the real snowidd's RESP listener: one connection's
// queue is bounded (resp_max_queued_commands, resp_max_pending_bytes), and
// so are all of them together (resp_max_queued_bytes), whatever the number
// of connections; a command past a bound is refused naming it, the
// transaction fails with EXECABORT as Redis's does, the connection goes on,
// and /metrics counts the refusals and shows what the queues hold.
//
// Before: the queues had a bound per transaction only; 80 connections each
// holding MULTI with 45,000 queued SNOWID.ID took snowidd from 21 to 207 MB.
#include <gtest/gtest.h>

#include <iostream>
#include <thread>

#include "abuse_server.h"

namespace snowid {
namespace {

using std::chrono::seconds;

constexpr std::string_view kExecAbort =
    "-EXECABORT Transaction discarded because of previous errors.\r\n";
// What one queued SNOWID.ID holds: its 9 bytes, 8 for the command and 8 for
// its one argument (resp_transaction.h).
constexpr std::uint64_t kQueuedIdBytes = 9 + 8 + 8;

std::size_t lines_in(const std::string& text) {
  std::size_t lines = 0;
  for (std::size_t at = text.find("\r\n"); at != std::string::npos; at = text.find("\r\n", at + 2))
    ++lines;
  return lines;
}

std::string repeated(std::string_view command, int times) {
  std::string out;
  out.reserve(command.size() * static_cast<std::size_t>(times));
  for (int i = 0; i < times; ++i) out += command;
  return out;
}

// A connection that sent MULTI and `ids` SNOWID.ID and read every answer.
std::unique_ptr<test::RawSocket> queue_ids(int port, int ids) {
  auto socket = std::make_unique<test::RawSocket>(port);
  EXPECT_TRUE(socket->send("MULTI\r\n" + repeated("SNOWID.ID\r\n", ids)));
  EXPECT_TRUE(socket->read_until(
      [&](const std::string& got) { return lines_in(got) == static_cast<std::size_t>(ids) + 1; },
      seconds{20}))
      << socket->received().substr(0, 200);
  return socket;
}

class RespQueueTest : public test::AbuseTest {
 protected:
  double metric(const std::string& series) { return test::metric(port(), series); }
  double refused(const std::string& limit) {
    return metric("snowid_resp_refused_queued_total{limit=\"" + limit + "\"}");
  }
};

TEST_F(RespQueueTest, MultiQueuesAreBoundedPerConnectionAndAllTogether) {
  start({"--resp", "127.0.0.1:0", "--resp-max-queued-commands", "1000", "--resp-max-queued-bytes",
         std::to_string(6 * 1000 * kQueuedIdBytes)});
  const int resp = server().listener_port("resp");
  ASSERT_GT(resp, 0) << server().log();

  // One connection: the 1001st command is refused, naming the limit.
  test::RawSocket one(resp);
  ASSERT_TRUE(one.send("MULTI\r\n" + repeated("SNOWID.ID\r\n", 1001) + "EXEC\r\nPING\r\n"));
  ASSERT_TRUE(one.read_until([](const std::string& got) { return got.ends_with("+PONG\r\n"); },
                             seconds{20}));
  EXPECT_EQ(one.received(),
            "+OK\r\n" + repeated("+QUEUED\r\n", 1000) +
                "-ERR the transaction already queues resp_max_queued_commands (1000) commands: "
                "EXEC it in parts\r\n" +
                std::string(kExecAbort) + "+PONG\r\n");
  EXPECT_EQ(refused("resp_max_queued_commands"), 1);
  EXPECT_EQ(metric("snowid_resp_queued_commands"), 0);

  // Six full queues hold all the bytes allowed; a seventh queue is refused
  // its first command, and its connection goes on.
  std::vector<std::unique_ptr<test::RawSocket>> holders;
  for (int i = 0; i < 6; ++i) holders.push_back(queue_ids(resp, 1000));
  EXPECT_EQ(metric("snowid_resp_queued_commands"), 6000);
  EXPECT_EQ(metric("snowid_resp_queued_bytes"), 6000 * kQueuedIdBytes);
  test::RawSocket late(resp);
  ASSERT_TRUE(late.send("MULTI\r\nSNOWID.ID\r\nSNOWID.ID\r\nEXEC\r\nPING\r\n"));
  ASSERT_TRUE(late.read_until([](const std::string& got) { return got.ends_with("+PONG\r\n"); },
                              seconds{10}));
  EXPECT_EQ(late.received(),
            "+OK\r\n-ERR the queued commands of all connections would pass "
            "resp_max_queued_bytes (150000 bytes): try the transaction again later\r\n"
            "+QUEUED\r\n" +
                std::string(kExecAbort) + "+PONG\r\n");
  EXPECT_EQ(refused("resp_max_queued_bytes"), 1);

  // DISCARD and EXEC give the bytes back; the late client's retry runs.
  ASSERT_TRUE(holders[0]->send("DISCARD\r\n"));
  ASSERT_TRUE(holders[1]->send("EXEC\r\n"));
  EXPECT_TRUE(holders[1]->read_until(
      [](const std::string& got) { return lines_in(got) == 1001 + 1 + 2 * 1000; }, seconds{10}));
  EXPECT_TRUE(holders[0]->read_until(
      [](const std::string& got) { return got.ends_with("+QUEUED\r\n+OK\r\n"); }, seconds{10}));
  late.received().clear();
  ASSERT_TRUE(late.send("MULTI\r\nSNOWID.ID\r\nEXEC\r\n"));
  EXPECT_TRUE(
      late.read_until([](const std::string& got) { return lines_in(got) == 5; }, seconds{10}));
  EXPECT_EQ(late.received().rfind("+OK\r\n+QUEUED\r\n*1\r\n$", 0), 0u) << late.received();
  EXPECT_EQ(metric("snowid_resp_queued_commands"), 4000);
  // Closed connections give back their queues.
  holders.clear();
  EXPECT_TRUE(test::wait_until([&] { return metric("snowid_resp_queued_bytes") == 0; },
                               std::chrono::seconds{5}));
}

// The attack, scaled down: many connections each queue as much as
// they may and never EXEC. All the queues together stay within
// resp_max_queued_bytes, and snowidd's memory grows by about that much.
TEST_F(RespQueueTest, ManyFullQueuesStayWithinTheProcessBound) {
  constexpr int kConnections = 32;
  constexpr int kIdsEach = 16'000;
  constexpr std::uint64_t kBound = 4 << 20;
  start({"--resp", "127.0.0.1:0", "--resp-max-queued-commands", std::to_string(kIdsEach),
         "--resp-max-queued-bytes", std::to_string(kBound)});
  const int resp = server().listener_port("resp");
  ASSERT_GT(resp, 0) << server().log();
  const long before_kib = test::rss_kib(server().pid());
  std::vector<std::unique_ptr<test::RawSocket>> holders(kConnections);
  std::vector<std::thread> threads;
  for (int i = 0; i < kConnections; ++i) {
    threads.emplace_back(
        [&, i] { holders[static_cast<std::size_t>(i)] = queue_ids(resp, kIdsEach); });
  }
  for (auto& thread : threads) thread.join();
  const long grown_kib = test::rss_kib(server().pid()) - before_kib;
  const double held = metric("snowid_resp_queued_bytes");
  std::cout << kConnections << " queues of " << kIdsEach
            << " SNOWID.ID: " << metric("snowid_resp_queued_commands") << " commands queued, "
            << held << " bytes held (bound " << kBound << "), " << refused("resp_max_queued_bytes")
            << " refused; RSS +" << grown_kib << " KiB" << std::endl;
  // A queue refused a command gives back all it held, so the queues left
  // are whole ones (10 fit), and never more than the bound.
  EXPECT_LE(held, kBound);
  EXPECT_GE(held, kBound / 2);
  // Unbounded, the queues would hold three times the bound.
  EXPECT_GE(refused("resp_max_queued_bytes"), kConnections / 2);
  // Vectors grow by doubling: up to about twice what they hold, and the
  // connections' buffers beside them; a sanitizer's shadow memory and
  // quarantine several times that (ThreadSanitizer's most: 13 times was
  // seen). Unbounded, the process grows by tens of times the bound.
  const long times = test::kAddressSanitizer ? 12 : test::kSanitized ? 24 : 4;
  EXPECT_LT(grown_kib, static_cast<long>(kBound / 1024) * times);
  // Every connection goes on (a whole queue refuses one more command).
  for (const auto& holder : holders) {
    ASSERT_TRUE(holder->send("PING\r\n"));
    EXPECT_TRUE(holder->read_until(
        [](const std::string& got) { return lines_in(got) == kIdsEach + 2; }, seconds{10}));
  }
}

}  // namespace
}  // namespace snowid
