// snowidd's RESP listener (the Redis protocol) over real sockets, with real
// clients: redis-cli and redis-benchmark (redis-tools), Python's redis
// package, hiredis from C++, Node.js's ioredis and node-redis (npm, pinned by
// tests/integration/resp_node/package-lock.json), and hostile byte streams.
#include <gtest/gtest.h>
#include <hiredis/hiredis.h>
#include <signal.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <thread>

#include "id_checks.h"
#include "resp_ids.h"
#include "server_process.h"
#include "snowid/decode.h"
#include "subprocess.h"

namespace snowid {
namespace {

using test::ServerProcess;

std::vector<std::string> resp_args(const test::TempDir& dir, std::vector<std::string> args) {
  args.insert(args.end(), {"--resp", "127.0.0.1:0", "--state-dir", dir.file("state"),
                           "--segment-auto-create", "true"});
  return args;
}

std::unique_ptr<ServerProcess> start(const test::TempDir& dir, std::vector<std::string> args = {}) {
  auto server = std::make_unique<ServerProcess>(SNOWIDD_PATH, resp_args(dir, std::move(args)));
  EXPECT_TRUE(server->started()) << server->log();
  return server;
}

// redis-cli's output for one command (stdout; trailing newline removed).
std::string cli(int port, std::vector<std::string> command) {
  std::vector<std::string> argv{"/usr/bin/redis-cli", "-p", std::to_string(port)};
  argv.insert(argv.end(), command.begin(), command.end());
  const auto r = test::run_process(argv);
  std::string out = r.out + r.err;
  while (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

// A hiredis connection.
struct Hiredis {
  explicit Hiredis(int port) : context(redisConnect("127.0.0.1", port)) {}
  ~Hiredis() { redisFree(context); }
  // The reply to one command; its type and integer or text.
  struct Reply {
    int type = 0;
    long long integer = 0;
    std::string text;
    std::vector<Id> ids;  // SNOWID.ID's or SNOWID.IDS's
  };
  Reply command(const std::vector<std::string>& args) {
    std::vector<const char*> argv;
    std::vector<std::size_t> lengths;
    for (const auto& a : args) {
      argv.push_back(a.data());
      lengths.push_back(a.size());
    }
    auto* raw = static_cast<redisReply*>(
        redisCommandArgv(context, static_cast<int>(argv.size()), argv.data(), lengths.data()));
    Reply reply;
    if (raw == nullptr) return reply;
    reply.type = raw->type;
    reply.integer = raw->integer;
    if (raw->str != nullptr) reply.text.assign(raw->str, raw->len);
    test::append_resp_ids(raw, reply.ids);
    freeReplyObject(raw);
    return reply;
  }
  redisContext* context;
};

// What a raw connection received for `bytes` within a second, and whether
// the server closed it.
struct Exchange {
  std::string received;
  bool closed = false;
};
Exchange talk(int port, const std::string& bytes) {
  test::RawSocket raw(port);
  if (!raw.connected()) return {};
  (void)raw.send(bytes);
  Exchange out;
  out.closed = raw.closed_by_peer(std::chrono::seconds{1});
  out.received = raw.received();
  return out;
}

// The replies to a whole pipeline `bytes` of commands that keep the
// connection open: a PING with a marker goes last, and its reply, which the
// server sends after every earlier one, ends the read (within 10 s, so a
// busy machine is waited for rather than mistaken for a missing reply).
std::string replies(int port, const std::string& bytes) {
  constexpr std::string_view kEnd = "$15\r\nend-of-pipeline\r\n";
  test::RawSocket raw(port);
  if (!raw.connected() || !raw.send(bytes + "PING end-of-pipeline\r\n")) return "not connected";
  const bool ended = raw.read_until(
      [&](const std::string& received) { return received.ends_with(kEnd); },
      std::chrono::seconds{10});
  std::string out = raw.received();
  if (ended) out.resize(out.size() - kEnd.size());
  return out;
}

class RespTest : public ::testing::Test {
 protected:
  test::TempDir dir;
};

TEST_F(RespTest, RedisCliIncrCountsOneTwoThreeAndContinuesAfterARestart) {
  std::string last;
  {
    auto server = start(dir);
    const int port = server->listener_port("resp");
    ASSERT_GT(port, 0) << server->log();
    EXPECT_EQ(cli(port, {"INCR", "orders"}), "1");
    EXPECT_EQ(cli(port, {"INCR", "orders"}), "2");
    EXPECT_EQ(cli(port, {"incr", "orders"}), "3");
    EXPECT_EQ(cli(port, {"INCRBY", "orders", "5"}), "8");
    last = cli(port, {"INCR", "orders"});
    server->signal(SIGTERM);
    EXPECT_EQ(server->wait(), 0) << server->log();
  }
  auto again = start(dir);
  const int port = again->listener_port("resp");
  EXPECT_GT(std::stoll(cli(port, {"INCR", "orders"})), std::stoll(last));
  // SNOWID.IDS: five increasing IDs.
  const auto lines = test::split_lines(cli(port, {"SNOWID.IDS", "5"}));
  ASSERT_EQ(lines.size(), 5u);
  for (std::size_t i = 1; i < lines.size(); ++i)
    EXPECT_GT(std::stoll(lines[i]), std::stoll(lines[i - 1]));
  EXPECT_GT(std::stoll(cli(port, {"SNOWID.ID"})), std::stoll(lines.back()));
  EXPECT_EQ(cli(port, {"PING"}), "PONG");
  EXPECT_EQ(cli(port, {"--no-raw", "CONFIG", "GET", "save"}), "(empty array)");
  EXPECT_EQ(cli(port, {"CONFIG", "SET", "save", ""}).rfind("ERR CONFIG", 0), 0u);
  EXPECT_EQ(cli(port, {"ECHO", "hello there"}), "hello there");
  EXPECT_EQ(cli(port, {"SELECT", "0"}), "OK");
  EXPECT_EQ(cli(port, {"SELECT", "1"}), "ERR DB index is out of range");
  EXPECT_EQ(cli(port, {"FLUSHALL"}).rfind("ERR unknown command 'FLUSHALL'", 0), 0u);
  EXPECT_EQ(cli(port, {"SNOWID.IDS", "0"}), "ERR count must be a positive integer");
  EXPECT_EQ(cli(port, {"INCRBY", "orders", "-1"}).rfind("ERR increment must be", 0), 0u);
  EXPECT_EQ(cli(port, {"INCR", "#bad tag"}).rfind("ERR bad segment tag", 0), 0u);
  EXPECT_NE(cli(port, {"INFO"}).find("redis_mode:standalone"), std::string::npos);
  EXPECT_NE(cli(port, {"SNOWID.INFO"}).find("\"layout\""), std::string::npos);
  EXPECT_EQ(cli(port, {"CLIENT", "SETNAME", "bad name"}).rfind("ERR client name", 0), 0u);
}

// Debian 12's python3-redis (4.3) speaks RESP2 only; RESP3 is tested with
// redis-cli -3 (Resp2DecodeIsAFlatArrayAndResp3AMap) and node-redis.
// INCRBY's increment is held to max_batch by the service, as every
// protocol's count is: refused in Redis's manner, and counted as too large
// in the request metrics like any other refusal.
TEST_F(RespTest, AnIncrementAboveMaxBatchIsRefusedAndCounted) {
  auto server = start(dir, {"--max-batch", "100"});
  const int port = server->listener_port("resp");
  ASSERT_GT(port, 0) << server->log();
  EXPECT_EQ(cli(port, {"INCRBY", "orders", "101"}), "ERR increment 101 exceeds max_batch 100");
  EXPECT_EQ(cli(port, {"INCR", "orders"}), "1");
  const std::string metrics = test::http_get(server->port(), "/metrics").body;
  EXPECT_NE(metrics.find("snowid_requests_total{protocol=\"resp\",call=\"segment\","
                         "outcome=\"too_large\"} 1\n"),
            std::string::npos)
      << metrics;
}

TEST_F(RespTest, PythonRedisClientWithPipelining) {
  auto server = start(dir);
  const int port = server->listener_port("resp");
  for (const char* protocol : {"2"}) {
    const auto r =
        test::run_process({"/usr/bin/python3", RESP_CLIENT_SCRIPT, std::to_string(port), protocol});
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
    const auto got = nlohmann::json::parse(r.out);
    EXPECT_EQ(got["ping"], true);
    std::vector<std::int64_t> incr = got["incr"];
    for (std::size_t i = 1; i < incr.size(); ++i) EXPECT_EQ(incr[i], incr[i - 1] + 1);
    EXPECT_EQ(got["incrby"], incr.back() + 10);
    std::vector<Id> ids = got["ids"];
    ASSERT_EQ(ids.size(), 70u);
    EXPECT_EQ(test::check_unique_and_increasing({ids}), "");
    EXPECT_NE(got["bad_count"].get<std::string>().find("count must be"), std::string::npos);
    EXPECT_NE(got["unknown"].get<std::string>().find("unknown command"), std::string::npos);
    EXPECT_GT(got["after_error"].get<Id>(), ids.back());
    // redis-py's default pipeline: MULTI … EXEC, every reply in order.
    EXPECT_EQ(got["transaction"][0], 1);
    EXPECT_EQ(got["transaction"][1], 2);
    EXPECT_EQ(got["transaction"][2], 5);
    std::vector<Id> transaction_ids = got["transaction"][3];
    EXPECT_EQ(transaction_ids.size(), 2u);
    EXPECT_EQ(test::check_unique_and_increasing({transaction_ids}), "");
    // A refused GET aborted the next one before any number was taken.
    EXPECT_NE(got["aborted"].get<std::string>().find("GET is not served"), std::string::npos)
        << got["aborted"];
    EXPECT_EQ(got["after_abort"], 6);
    EXPECT_EQ(got["exists"], nlohmann::json::parse(R"([1, "string", "none", -1, -2, -1])"));
  }
  // The connection name is the agent.
  EXPECT_NE(test::http_get(server->port(), "/metrics")
                .body.find("snowid_ids_issued_total{agent=\"python-redis\"}"),
            std::string::npos);
}

TEST_F(RespTest, Resp2DecodeIsAFlatArrayAndResp3AMap) {
  auto server = start(dir, {"--datacenter-id", "3", "--worker-id", "4"});
  const int port = server->listener_port("resp");
  const std::string id = cli(port, {"SNOWID.ID"});
  const auto flat = test::split_lines(cli(port, {"SNOWID.DECODE", id}));
  ASSERT_EQ(flat.size(), 10u);
  EXPECT_EQ(flat[4], "datacenter_id");
  EXPECT_EQ(flat[5], "3");
  EXPECT_EQ(flat[7], "4");
  // RESP3 (HELLO 3, as redis-cli -3 says it): a map.
  const std::string map = cli(port, {"-3", "--no-raw", "SNOWID.DECODE", id});
  EXPECT_NE(map.find("1# \"timestamp_ms\" => (integer) "), std::string::npos) << map;
  EXPECT_NE(map.find("3# \"datacenter_id\" => (integer) 3"), std::string::npos) << map;
  const std::string hello = cli(port, {"-3", "--no-raw", "HELLO", "3"});
  EXPECT_NE(hello.find("\"proto\" => (integer) 3"), std::string::npos) << hello;
  EXPECT_EQ(cli(port, {"HELLO", "4"}), "NOPROTO unsupported protocol version");
  EXPECT_EQ(cli(port, {"-3", "--no-raw", "CLIENT", "GETNAME"}), "(nil)");
  EXPECT_EQ(cli(port, {"SNOWID.DECODE", "-5"}).rfind("ERR", 0), 0u);
  EXPECT_EQ(cli(port, {"SNOWID.DECODE", "99999999999999999999"}).rfind("ERR", 0), 0u);
}

TEST_F(RespTest, ATokenIsThePasswordAndNothingButAuthIsServedBeforeIt) {
  auto server = start(dir, {"--bearer-token", "s3cret"});
  const int port = server->listener_port("resp");
  EXPECT_EQ(cli(port, {"SNOWID.ID"}), "NOAUTH Authentication required.");
  EXPECT_EQ(cli(port, {"PING"}), "NOAUTH Authentication required.");
  EXPECT_NE(cli(port, {"-a", "wrong", "--no-auth-warning", "PING"}).find("WRONGPASS"),
            std::string::npos);
  EXPECT_EQ(cli(port, {"-a", "s3cret", "--no-auth-warning", "PING"}), "PONG");
  EXPECT_GT(std::stoll(cli(port, {"-a", "s3cret", "--no-auth-warning", "SNOWID.ID"})), 0);
  EXPECT_EQ(cli(port, {"-3", "--no-raw", "-a", "s3cret", "--no-auth-warning", "INCR", "t"}),
            "(integer) 1");
  const auto r = test::run_process(
      {"/usr/bin/python3", RESP_CLIENT_SCRIPT, std::to_string(port), "2", "s3cret"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  // Before AUTH, the unauthenticated limits: at most 10 arguments.
  Hiredis h(port);
  std::vector<std::string> many(20, "x");
  many[0] = "PING";
  const auto refused = h.command(many);
  EXPECT_NE(refused.text.find("Protocol error"), std::string::npos) << refused.text;
}

// hiredis clients on several threads, pipelining: no ID twice, all counted.
TEST_F(RespTest, ConcurrentPipelinedClientsNeverShareAnId) {
  auto server = start(dir);
  const int port = server->listener_port("resp");
  std::vector<std::vector<Id>> per_client(4);
  std::vector<std::vector<Id>> numbers(4);
  std::vector<std::thread> clients;
  for (std::size_t c = 0; c < per_client.size(); ++c) {
    clients.emplace_back([port, &mine = per_client[c], &counted = numbers[c]] {
      Hiredis h(port);
      ASSERT_EQ(h.command({"CLIENT", "SETNAME", "hiredis"}).text, "OK");
      for (int round = 0; round < 100; ++round) {
        for (int i = 0; i < 16; ++i) redisAppendCommand(h.context, "SNOWID.ID");
        redisAppendCommand(h.context, "SNOWID.IDS 50");
        redisAppendCommand(h.context, "INCR shared");
        for (int i = 0; i < 18; ++i) {
          void* raw = nullptr;
          ASSERT_EQ(redisGetReply(h.context, &raw), REDIS_OK);
          auto* reply = static_cast<redisReply*>(raw);
          if (i < 17) test::append_resp_ids(reply, mine);
          if (reply->type == REDIS_REPLY_INTEGER && i == 17) counted.push_back(reply->integer);
          freeReplyObject(reply);
        }
      }
    });
  }
  for (auto& t : clients) t.join();
  for (const auto& mine : per_client) EXPECT_EQ(mine.size(), 100u * 66);
  EXPECT_EQ(test::check_unique_and_increasing(per_client), "");
  EXPECT_EQ(test::check_unique_and_increasing(numbers), "");
  const std::string metrics = test::http_get(server->port(), "/metrics").body;
  EXPECT_NE(metrics.find("snowid_ids_issued_total{agent=\"hiredis\"} 26400"), std::string::npos)
      << metrics;
  EXPECT_NE(metrics.find("snowid_resp_commands_total{command=\"snowid.ids\"} 400"),
            std::string::npos);
}

TEST_F(RespTest, RedisBenchmarkRunsToCompletion) {
  auto server = start(dir);
  const int port = server->listener_port("resp");
  const auto r = test::run_process({"/usr/bin/redis-benchmark", "-p", std::to_string(port), "-c",
                                    "8", "-n", "20000", "-P", "16", "-q", "INCR", "bench"},
                                   {}, std::chrono::seconds{60});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("requests per second"), std::string::npos) << r.out << r.err;
  // Every INCR got a number: the tag moved by 20000 at least.
  EXPECT_GE(std::stoll(cli(port, {"INCR", "bench"})), 20001);
}

TEST_F(RespTest, HostileStreamsGetAnErrorAndServingGoesOn) {
  auto server = start(dir, {"--resp-max-bulk-bytes", "1024", "--resp-max-arguments", "16"});
  const int port = server->listener_port("resp");
  const std::vector<std::pair<std::string, std::string>> hostile{
      {"*2000000000\r\n", "Protocol error"},    {"*1\r\n$99999999999\r\n", "Protocol error"},
      {"*1\r\n$2000\r\n", "Protocol error"},    {"*2\r\n$4\r\nPING\r\n:12\r\n", "Protocol error"},
      {"*1\r\n$4\r\nPINGxx", "Protocol error"}, {"*20\r\n", "Protocol error"},
  };
  for (const auto& [bytes, says] : hostile) {
    const Exchange r = talk(port, bytes);
    EXPECT_NE(r.received.find(says), std::string::npos)
        << testing::PrintToString(bytes) << r.received;
    EXPECT_TRUE(r.closed) << testing::PrintToString(bytes);
  }
  // Inline commands, as over telnet; the connection stays open.
  const Exchange inline_ping = talk(port, "PING\r\nECHO \"a b\"\r\n");
  EXPECT_EQ(inline_ping.received, "+PONG\r\n$3\r\na b\r\n");
  EXPECT_FALSE(inline_ping.closed);
  EXPECT_EQ(cli(port, {"PING"}), "PONG");
}

// A command with the wrong number of arguments is refused as Redis refuses
// it, and the connection goes on: the pipelined commands after it are
// answered (a client that sent them must not lose them to a reset).
TEST_F(RespTest, AWrongNumberOfArgumentsKeepsTheConnection) {
  auto server = start(dir);
  const std::vector<std::string> commands{"INCR",       "INCRBY t",      "SNOWID.ID x",
                                          "SNOWID.IDS", "SNOWID.DECODE", "SNOWID.INFO x",
                                          "PING a b",   "ECHO"};
  std::string pipelined;
  std::string expected;
  for (const auto& command : commands) {
    pipelined += command + "\r\n";
    const std::string name = command.substr(0, command.find(' '));
    expected += "-ERR wrong number of arguments for '" + name + "' command\r\n";
  }
  const Exchange r = talk(server->listener_port("resp"), pipelined + "PING\r\n");
  EXPECT_EQ(r.received, expected + "+PONG\r\n");
  EXPECT_FALSE(r.closed);
}

TEST_F(RespTest, LimitsOfConnectionsAndIdleTime) {
  auto server = start(dir, {"--resp-max-connections", "2", "--resp-idle-timeout-ms", "300"});
  const int port = server->listener_port("resp");
  Hiredis first(port);
  Hiredis second(port);
  EXPECT_EQ(first.command({"PING"}).text, "PONG");
  EXPECT_EQ(second.command({"PING"}).text, "PONG");
  const Exchange third = talk(port, "");
  EXPECT_EQ(third.received, "-ERR max number of clients reached\r\n");
  EXPECT_TRUE(third.closed);
  std::this_thread::sleep_for(std::chrono::milliseconds{800});
  EXPECT_EQ(first.command({"PING"}).type, 0);  // closed at the idle timeout
  EXPECT_NE(test::http_get(server->port(), "/metrics")
                .body.find("snowid_resp_refused_connections_total 1"),
            std::string::npos);
}

// A request that cannot fit resp_max_pending_bytes, though each argument
// fits resp_max_bulk_bytes, is refused in words before the connection closes.
TEST_F(RespTest, ARequestBeyondThePendingLimitIsRefusedInWords) {
  auto server = start(dir, {"--resp-max-pending-bytes", "4096", "--resp-max-bulk-bytes", "1024"});
  const int port = server->listener_port("resp");
  std::string command = "*10\r\n$4\r\nECHO\r\n";
  for (int i = 0; i < 9; ++i) command += "$1000\r\n" + std::string(1000, 'x') + "\r\n";
  const Exchange r = talk(port, command);
  EXPECT_EQ(r.received.rfind("-ERR Protocol error: request larger than resp_max_pending_bytes", 0),
            0u)
      << r.received;
  EXPECT_TRUE(r.closed);
  EXPECT_EQ(cli(port, {"PING"}), "PONG");
  const auto refused =
      test::run_process({SNOWIDD_PATH, "--resp", "127.0.0.1:0", "--resp-max-pending-bytes", "1000",
                         "--resp-max-bulk-bytes", "990", "--check-config"});
  EXPECT_EQ(refused.exit_code, 2);
  EXPECT_NE(refused.err.find("at least 64 bytes below"), std::string::npos) << refused.err;
}

// A HELLO that is refused changes nothing: not the protocol, not the name,
// not authentication, even when its AUTH part was right.
TEST_F(RespTest, ARefusedHelloChangesNothing) {
  auto server = start(dir, {"--bearer-token", "sekret"});
  const int port = server->listener_port("resp");
  const Exchange bogus = talk(port, "HELLO 3 AUTH default sekret BOGUS\r\nSNOWID.ID\r\n");
  EXPECT_EQ(bogus.received,
            "-ERR Syntax error in HELLO option 'BOGUS'\r\n-NOAUTH Authentication required.\r\n");
  const Exchange bad_name = talk(port, "HELLO 3 AUTH default sekret SETNAME b@d\r\nSNOWID.ID\r\n");
  EXPECT_EQ(bad_name.received.rfind("-ERR client name must match", 0), 0u) << bad_name.received;
  EXPECT_NE(bad_name.received.find("-NOAUTH Authentication required.\r\n"), std::string::npos);
  const Exchange good = talk(port, "HELLO 2 AUTH default sekret\r\nSNOWID.ID\r\n");
  EXPECT_NE(good.received.find("\r\n:"), std::string::npos) << good.received;
}

// Facts with bytes that are not UTF-8 (a state directory's path) are shown
// with U+FFFD, never a crash.
TEST_F(RespTest, InfoWithBytesThatAreNotUtf8) {
  const std::string state = dir.file("st\xe9te");
  ServerProcess server(SNOWIDD_PATH,
                       {"--resp", "127.0.0.1:0", "--state-dir", state, "--segment-store", "off"});
  ASSERT_TRUE(server.started()) << server.log();
  const int port = server.listener_port("resp");
  EXPECT_NE(cli(port, {"SNOWID.INFO"}).find("st\xef\xbf\xbdte"), std::string::npos);
  EXPECT_EQ(cli(port, {"PING"}), "PONG");
}

// SNOWID.ID and SNOWID.IDS answer bulk strings of decimal digits: a client
// that reads RESP integers into doubles gets them intact too.
TEST_F(RespTest, IdsAreBulkStringsAndCountersIntegers) {
  auto server = start(dir);
  const int port = server->listener_port("resp");
  const Exchange one = talk(port, "SNOWID.ID\r\nSNOWID.IDS 2\r\nINCR orders\r\n");
  const auto lines = test::split_lines(one.received);
  ASSERT_EQ(lines.size(), 8u) << one.received;
  EXPECT_EQ(lines[0], "$19\r");
  EXPECT_EQ(lines[2], "*2\r");
  EXPECT_EQ(lines[3], "$19\r");
  EXPECT_EQ(lines[7], ":1\r");  // INCR is an integer, as Redis's
  Hiredis h(port);
  EXPECT_EQ(h.command({"SNOWID.ID"}).type, REDIS_REPLY_STRING);
  EXPECT_EQ(h.command({"SNOWID.IDS", "3"}).ids.size(), 3u);
}

// The Node.js clients of the issue: ioredis and node-redis (RESP2 and, after
// HELLO 3, RESP3), each asked for 1000 IDs at once, a pipeline of SNOWID.IDS
// 2 and SNOWID.ID, and a transaction. Every ID must come back exactly as
// issued: distinct, increasing per call, between the redis-cli calls made
// before and after, and decoding to this node's datacenter and worker.
TEST_F(RespTest, NodeClientsGetEveryIdIntact) {
  ASSERT_TRUE(std::filesystem::exists(std::string(RESP_NODE_DIR) + "/node_modules/ioredis"))
      << "no " << RESP_NODE_DIR << "/node_modules: run scripts/install-deps.sh test";
  auto server = start(dir, {"--datacenter-id", "3", "--worker-id", "4"});
  const int port = server->listener_port("resp");
  const Id before = std::stoll(cli(port, {"SNOWID.ID"}));
  const auto r = test::run_process({"/usr/bin/env", "node",
                                    std::string(RESP_NODE_DIR) + "/resp_node_client.mjs",
                                    std::to_string(port)});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  std::vector<Id> cli_ids;
  for (const auto& line : test::split_lines(cli(port, {"SNOWID.IDS", "1000"})))
    cli_ids.push_back(std::stoll(line));
  ASSERT_EQ(cli_ids.size(), 1000u);
  const auto got = nlohmann::json::parse(r.out);
  std::vector<std::vector<Id>> sources{cli_ids};
  for (const char* client : {"ioredis", "node_redis", "node_redis_resp3"}) {
    SCOPED_TRACE(client);
    const auto& c = got[client];
    auto ids_of = [](const nlohmann::json& texts) {
      std::vector<Id> ids;
      for (const auto& text : texts) ids.push_back(std::stoll(text.get<std::string>()));
      return ids;
    };
    ASSERT_EQ(c["ids"].size(), 1000u) << c["ids"];
    sources.push_back(ids_of(c["ids"]));
    ASSERT_EQ(c["pipeline"].size(), 2u) << c["pipeline"];
    sources.push_back(ids_of(c["pipeline"][0]));
    EXPECT_EQ(sources.back().size(), 2u);
    sources.push_back({std::stoll(c["pipeline"][1].get<std::string>())});
    sources.push_back({std::stoll(c["id"].get<std::string>())});
  }
  EXPECT_EQ(got["ioredis"]["id_type"], "string");
  EXPECT_EQ(test::check_unique_and_increasing(sources), "");
  for (std::size_t s = 0; s < sources.size(); ++s) {
    for (Id id : sources[s]) {
      ASSERT_GT(id, before);
      // The Node clients ran before redis-cli's call.
      if (s > 0) {
        ASSERT_LT(id, cli_ids.front());
      }
      const auto fields = snowid::decode(Layout{}, id);
      ASSERT_TRUE(fields.ok());
      ASSERT_EQ(fields->datacenter, 3u);
      ASSERT_EQ(fields->worker, 4u);
    }
  }
  // Transactions: ioredis's multi() and node-redis's, one after the other on
  // tag js-orders; a refused GET takes nothing.
  const auto& io = got["ioredis"];
  EXPECT_EQ(io["multi"][0], "1");
  EXPECT_EQ(io["multi"][1], "2");
  EXPECT_EQ(io["multi"][2].size(), 2u) << io["multi"];
  EXPECT_EQ(io["incr_after"], "3");
  EXPECT_NE(io["aborted"].get<std::string>().find("EXECABORT"), std::string::npos) << io["aborted"];
  EXPECT_EQ(io["incr_after_abort"], "4");
  EXPECT_EQ(io["exists"], "1");
  EXPECT_EQ(got["node_redis"]["multi"], nlohmann::json::parse(R"(["5", "6"])"));
  EXPECT_EQ(got["node_redis"]["incr_after"], "7");
  EXPECT_EQ(got["node_redis_resp3"]["multi"], nlohmann::json::parse(R"(["8", "9"])"));
  EXPECT_EQ(got["node_redis_resp3"]["incr_after"], "10");
}

// What `printf 'MULTI\r\nINCR orders\r\n…EXEC\r\n' | redis-cli` sends: the
// commands are queued and run by EXEC; a command refused while queuing
// aborts the transaction, which then takes no number.
TEST_F(RespTest, MultiExecRunsTheQueueOrNothing) {
  auto server = start(dir);
  const int port = server->listener_port("resp");
  EXPECT_EQ(replies(port, "MULTI\r\nINCR orders\r\nINCRBY orders 3\r\nPING\r\nEXEC\r\n"),
            "+OK\r\n+QUEUED\r\n+QUEUED\r\n+QUEUED\r\n*3\r\n:1\r\n:4\r\n+PONG\r\n");
  const std::vector<std::pair<std::string, std::string>> refused{
      {"GET orders", "-ERR GET is not served by snowid: "},
      {"INCRBY orders x", "-ERR value is not an integer or out of range"},
      {"INCRBY orders 100000", "-ERR increment 100000 exceeds max_batch"},
      {"SNOWID.IDS 0", "-ERR count must be a positive integer"},
      {"SNOWID.IDS 20000", "-ERR count 20000 is out of range"},
      {"INCR #bad!tag", "-ERR bad segment tag"},
      {"INCR", "-ERR wrong number of arguments for 'INCR' command"},
      {"NOSUCH", "-ERR unknown command 'NOSUCH'"},
      {"WATCH orders", "-ERR WATCH is not served by snowid: "},
      {"MULTI", "-ERR MULTI is not allowed inside MULTI"},
      {"HELLO 3", "-ERR HELLO is not allowed inside MULTI"},
  };
  int next = 5;  // the INCR after each aborted transaction takes the next number, no more
  for (const auto& [command, error] : refused) {
    const std::string r = replies(
        port, "MULTI\r\nINCR orders\r\n" + command + "\r\nSNOWID.ID\r\nEXEC\r\nINCR orders\r\n");
    EXPECT_EQ(r.rfind("+OK\r\n+QUEUED\r\n" + error, 0), 0u) << command << r;
    EXPECT_NE(r.find("\r\n+QUEUED\r\n-EXECABORT Transaction discarded because of "
                              "previous errors.\r\n:" +
                              std::to_string(next++) + "\r\n"),
              std::string::npos)
        << command << r;
  }
  EXPECT_EQ(replies(port, "MULTI\r\nINCR orders\r\nDISCARD\r\nINCR orders\r\n"),
            "+OK\r\n+QUEUED\r\n+OK\r\n:" + std::to_string(next++) + "\r\n");
  EXPECT_EQ(replies(port, "EXEC\r\nDISCARD\r\nUNWATCH\r\n"),
            "-ERR EXEC without MULTI\r\n-ERR DISCARD without MULTI\r\n+OK\r\n");
  EXPECT_EQ(replies(port, "MULTI\r\nEXEC\r\n"), "+OK\r\n*0\r\n");
  // A transaction whose answer would be too large is refused while queuing.
  std::string many = "MULTI\r\n";
  for (int i = 0; i < 11; ++i) many += "SNOWID.IDS 10000\r\n";
  const std::string large = replies(port, many + "EXEC\r\nINCR orders\r\n");
  EXPECT_NE(large.find("more than 100000 IDs"), std::string::npos) << large;
  EXPECT_NE(large.find("-EXECABORT"), std::string::npos);
  EXPECT_EQ(large.substr(large.rfind(':')), ":" + std::to_string(next) + "\r\n");
}

// EXISTS, TYPE, TTL and PTTL say whether this node serves a tag; GET, SET and
// their kin are refused with what to use instead.
TEST_F(RespTest, TagFactsAndRefusalsThatNameWhatToUse) {
  auto server = start(dir);
  const int port = server->listener_port("resp");
  EXPECT_EQ(cli(port, {"EXISTS", "orders"}), "0");
  EXPECT_EQ(cli(port, {"TYPE", "orders"}), "none");
  EXPECT_EQ(cli(port, {"TTL", "orders"}), "-2");
  EXPECT_EQ(cli(port, {"INCR", "orders"}), "1");
  EXPECT_EQ(cli(port, {"EXISTS", "orders", "orders", "other"}), "2");
  EXPECT_EQ(cli(port, {"TYPE", "orders"}), "string");
  EXPECT_EQ(cli(port, {"TTL", "orders"}), "-1");
  EXPECT_EQ(cli(port, {"PTTL", "orders"}), "-1");
  EXPECT_EQ(cli(port, {"EXISTS", "#bad!tag"}).rfind("ERR bad segment tag", 0), 0u);
  EXPECT_NE(cli(port, {"GET", "orders"}).find("INCR returns each number"), std::string::npos);
  EXPECT_NE(cli(port, {"SET", "orders", "5"}).find("snowid segment create"), std::string::npos);
  EXPECT_NE(cli(port, {"DECR", "orders"}).find("use INCR"), std::string::npos);
  EXPECT_NE(cli(port, {"DEL", "orders"}).find("never removed"), std::string::npos);
  EXPECT_NE(cli(port, {"EXPIRE", "orders", "5"}).find("never expire"), std::string::npos);
  EXPECT_NE(cli(port, {"HGETALL", "x"}).find("snowid serves INCR, INCRBY"), std::string::npos);
  // None of them took a number.
  EXPECT_EQ(cli(port, {"INCR", "orders"}), "2");
  ServerProcess off(SNOWIDD_PATH, {"--resp", "127.0.0.1:0", "--state-dir", dir.file("off"),
                                   "--segment-store", "off"});
  ASSERT_TRUE(off.started()) << off.log();
  EXPECT_NE(cli(off.listener_port("resp"), {"EXISTS", "orders"}).find("segment mode is off"),
            std::string::npos);
}

// On a ticket-server set a range's numbers step by the set's increment, so
// INCRBY n > 1 can never be n consecutive numbers: it is refused before any
// number is taken, and the next INCR follows the last one in its residue class.
TEST_F(RespTest, IncrbyOnTicketServersIsRefusedWithoutTakingANumber) {
  std::string stores;
  for (int k = 0; k < 2; ++k) {
    const std::string url = "sqlite://" + dir.file("ticket" + std::to_string(k) + ".db");
    const auto r = test::run_process({SNOWID_CLI_PATH, "segment", "ticket-init", "--increment", "2",
                                      "--offset", std::to_string(k), "--segment-store", url});
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
    stores += (k == 0 ? "" : " ") + url;
  }
  auto server = start(dir, {"--segment-store", stores});
  const int port = server->listener_port("resp");
  const std::int64_t first = std::stoll(cli(port, {"INCR", "orders"}));
  const std::int64_t second = std::stoll(cli(port, {"INCR", "orders"}));
  EXPECT_EQ(second, first + 2);
  const std::string refused = cli(port, {"INCRBY", "orders", "3"});
  EXPECT_NE(refused.find("ticket-server set"), std::string::npos) << refused;
  const Exchange queued = talk(port, "MULTI\r\nINCRBY orders 2\r\nEXEC\r\n");
  EXPECT_EQ(queued.received.rfind("+OK\r\n-ERR 2 consecutive numbers cannot be served", 0), 0u)
      << queued.received;
  EXPECT_NE(queued.received.find("-EXECABORT"), std::string::npos) << queued.received;
  EXPECT_EQ(std::stoll(cli(port, {"INCR", "orders"})), second + 2);
  EXPECT_EQ(std::stoll(cli(port, {"INCRBY", "orders", "1"})), second + 4);

  // Over HTTP a batch that spans the members' ranges is sorted, and each
  // answer names an issuer of its own: the members' ranges go out in turn,
  // so a batch need not lie above the one before (docs/clients.md).
  std::string last_issuer;
  for (int batch = 0; batch < 3; ++batch) {
    const test::HttpReply reply = test::http_get(server->port(), "/v1/segment/orders?count=2500");
    ASSERT_EQ(reply.status, 200) << reply.body;
    std::vector<std::int64_t> numbers;
    const auto answer = nlohmann::json::parse(reply.body);
    for (const auto& text : answer["ids"]) {
      numbers.push_back(std::stoll(text.get<std::string>()));
    }
    ASSERT_EQ(numbers.size(), 2500u) << reply.body.substr(0, 300);
    for (std::size_t i = 1; i < numbers.size(); ++i) ASSERT_GT(numbers[i], numbers[i - 1]);
    ASSERT_TRUE(reply.headers.count("snowid-issuer"));
    const std::string issuer = reply.headers.at("snowid-issuer");
    EXPECT_NE(issuer.find('-'), std::string::npos) << issuer;
    EXPECT_NE(issuer, last_issuer);
    last_issuer = issuer;
  }
}

}  // namespace
}  // namespace snowid
