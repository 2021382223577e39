// TLS on the stream listeners (resp_tls, thrift_tls), against the real
// snowidd with a self-signed certificate: real clients over TLS get IDs
// (redis-cli --tls, Python's redis package with ssl=True, the Python client
// thrift-compiler generates over TSSLSocket), the bearer token still
// applies, and a plain-text client of the same port gets nothing: neither
// an answer nor an ID.
#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <regex>
#include <string>
#include <vector>

#include "certificates.h"
#include "id_checks.h"
#include "server_process.h"
#include "subprocess.h"

namespace snowid {
namespace {

using test::ServerProcess;

class StreamTlsTest : public ::testing::Test {
 protected:
  void SetUp() override { files = test::make_self_signed_certificate(dir.path(), "node"); }

  std::unique_ptr<ServerProcess> start(std::vector<std::string> args) {
    args.insert(args.end(), {"--state-dir", dir.file("state"), "--tls-cert", files.cert,
                             "--tls-key", files.key});
    auto server = std::make_unique<ServerProcess>(SNOWIDD_PATH, args);
    EXPECT_TRUE(server->started()) << server->log();
    return server;
  }

  // redis-cli's output for one command, the last line feed removed.
  test::ProcessResult redis_cli(int port, std::vector<std::string> tls,
                                std::vector<std::string> command) {
    std::vector<std::string> argv{"/usr/bin/redis-cli", "-p", std::to_string(port)};
    argv.insert(argv.end(), tls.begin(), tls.end());
    argv.insert(argv.end(), command.begin(), command.end());
    auto r = test::run_process(argv);
    while (!r.out.empty() && r.out.back() == '\n') r.out.pop_back();
    return r;
  }

  std::vector<std::string> tls_flags() const { return {"--tls", "--cacert", files.cert}; }

  test::TempDir dir;
  test::CertificateFiles files;
};

bool all_digits(const std::string& text) {
  return !text.empty() && text.find_first_not_of("0123456789") == std::string::npos;
}

TEST_F(StreamTlsTest, RedisCliAndRedisPyGetIdsOverTlsAndPlainTextGetsNothing) {
  auto server = start({"--resp", "127.0.0.1:0", "--resp-tls", "true", "--segment-auto-create", "true"});
  const int port = server->listener_port("resp");
  ASSERT_GT(port, 0) << server->log();

  const auto id = redis_cli(port, tls_flags(), {"SNOWID.ID"});
  EXPECT_TRUE(all_digits(id.out)) << id.out << id.err;
  const auto number = redis_cli(port, tls_flags(), {"INCR", "orders"});
  EXPECT_EQ(number.out, "1") << number.err;

  // Every feature of resp_client.py (pipelines, MULTI ... EXEC) over TLS.
  const auto py = test::run_process(
      {"/usr/bin/python3", RESP_CLIENT_SCRIPT, "--tls-ca", files.cert, std::to_string(port), "2"});
  ASSERT_EQ(py.exit_code, 0) << py.out << py.err;
  const auto got = nlohmann::json::parse(py.out);
  EXPECT_EQ(got["ping"], true);
  std::vector<Id> ids = got["ids"];
  EXPECT_EQ(ids.size(), 70u);
  EXPECT_EQ(test::check_unique_and_increasing({ids}), "");

  // A plain-text client: its PING is taken for a TLS hello and refused.
  const auto plain = redis_cli(port, {}, {"PING"});
  EXPECT_EQ(plain.out.find("PONG"), std::string::npos) << plain.out;
  test::RawSocket raw(port);
  ASSERT_TRUE(raw.send("PING\r\nSNOWID.ID\r\n"));
  EXPECT_TRUE(raw.closed_by_peer(std::chrono::seconds{5}));
  EXPECT_EQ(raw.received().find("PONG"), std::string::npos) << raw.received();
  // The numbers went on from where redis-cli and redis-py left them.
  EXPECT_EQ(redis_cli(port, tls_flags(), {"INCR", "orders"}).out, "2");
}

// A connection that opens and never completes its handshake (silent, or a
// hello cut short) holds its slot until the read timeout, no longer.
TEST_F(StreamTlsTest, AHandshakeLeftUnfinishedIsClosedAtTheReadTimeout) {
  auto server =
      start({"--resp", "127.0.0.1:0", "--resp-tls", "true", "--read-timeout-ms", "500"});
  const int port = server->listener_port("resp");
  ASSERT_GT(port, 0) << server->log();
  test::RawSocket silent(port);
  test::RawSocket cut_short(port);
  // A TLS record header announcing a 512-byte handshake message, then nothing.
  ASSERT_TRUE(cut_short.send(std::string("\x16\x03\x01\x02\x00", 5)));
  EXPECT_TRUE(silent.closed_by_peer(std::chrono::seconds{3}));
  EXPECT_TRUE(cut_short.closed_by_peer(std::chrono::seconds{3}));
  EXPECT_TRUE(all_digits(redis_cli(port, tls_flags(), {"SNOWID.ID"}).out));
}

TEST_F(StreamTlsTest, TheTokenStillAppliesOverTls) {
  auto server =
      start({"--resp", "127.0.0.1:0", "--resp-tls", "true", "--bearer-token", "s3cret"});
  const int port = server->listener_port("resp");
  ASSERT_GT(port, 0) << server->log();
  const auto without = redis_cli(port, tls_flags(), {"SNOWID.ID"});
  EXPECT_NE(without.out.find("NOAUTH"), std::string::npos) << without.out << without.err;
  std::vector<std::string> with = tls_flags();
  with.insert(with.end(), {"-a", "s3cret", "--no-auth-warning"});
  EXPECT_TRUE(all_digits(redis_cli(port, with, {"SNOWID.ID"}).out));
}

TEST_F(StreamTlsTest, ThriftClientOverTlsGetsIdsAndAPlainOneIsRefused) {
  auto server = start({"--thrift", "127.0.0.1:0", "--thrift-tls", "true"});
  const int port = server->listener_port("thrift");
  ASSERT_GT(port, 0) << server->log();
  const std::map<std::string, std::string> env{{"PYTHONPATH", THRIFT_PY_DIR}};
  const auto tls = test::run_process(
      {"/usr/bin/python3", THRIFT_CLIENT_SCRIPT, "--tls-ca", files.cert, std::to_string(port),
       "all"},
      env);
  ASSERT_EQ(tls.exit_code, 0) << tls.out << tls.err;
  const auto got = nlohmann::json::parse(tls.out);
  std::vector<Id> ids = got["ids"];
  EXPECT_EQ(ids.size(), 200u);
  EXPECT_EQ(test::check_unique_and_increasing({ids}), "");

  const auto plain = test::run_process(
      {"/usr/bin/python3", THRIFT_CLIENT_SCRIPT, std::to_string(port), "one"}, env);
  EXPECT_EQ(plain.exit_code, 3) << plain.out << plain.err;
  EXPECT_EQ(plain.out.find("\"id\""), std::string::npos) << plain.out;
}

TEST_F(StreamTlsTest, TlsWithoutACertificateIsOneLineAndExitTwo) {
  for (const char* listener : {"resp", "thrift"}) {
    const std::string name = listener;
    const auto r = test::run_process({SNOWIDD_PATH, "--" + name, "127.0.0.1:0",
                                      "--" + name + "-tls", "true", "--check-config"});
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_EQ(r.err, "snowidd: " + name + "_tls needs tls_cert and tls_key (the certificate HTTP "
                     "and gRPC serve too)\n");
  }
}

}  // namespace
}  // namespace snowid
