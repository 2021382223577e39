// snowidd with TLS on both APIs, against a certificate made by the test with
// the openssl command: HTTPS through curl, gRPC through a TLS channel, and
// plain-text clients shut out.
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "certificates.h"
#include "server_process.h"
#include "snowid/v1/snowid.grpc.pb.h"
#include "subprocess.h"

namespace snowid {
namespace {

namespace v1 = ::snowid::v1;
using test::ServerProcess;

class TlsTest : public ::testing::Test {
 protected:
  void SetUp() override { files = test::make_self_signed_certificate(dir.path(), "server"); }

  std::string cert() const { return files.cert; }
  std::string key() const { return files.key; }

  std::unique_ptr<ServerProcess> start() {
    auto server = std::make_unique<ServerProcess>(
        SNOWIDD_PATH, std::vector<std::string>{"--state-dir", dir.file("state"), "--tls-cert",
                                               cert(), "--tls-key", key()});
    EXPECT_TRUE(server->started()) << server->log();
    return server;
  }

  test::ProcessResult curl(int port, const std::vector<std::string>& targets) const {
    std::vector<std::string> argv{"/usr/bin/curl", "-sS", "--max-time", "10", "--cacert", cert()};
    for (const auto& target : targets) {
      argv.push_back("https://127.0.0.1:" + std::to_string(port) + target);
    }
    return test::run_process(argv);
  }

  static grpc::ClientContext* with_deadline(grpc::ClientContext& context) {
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds{10});
    return &context;
  }

  test::TempDir dir;
  test::CertificateFiles files;
};

TEST_F(TlsTest, HttpsServesIdsAndKeepsTheConnection) {
  auto server = start();
  ASSERT_TRUE(server->started());
  // Two requests in one curl run share one TLS connection.
  const auto r = curl(server->port(), {"/v1/id", "/v1/ids?count=3&format=text"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto lines = test::split_lines(r.out);
  ASSERT_EQ(lines.size(), 4u) << r.out;
  const auto first = nlohmann::json::parse(lines[0]);
  const auto id = std::stoll(first.at("id").get<std::string>());
  EXPECT_GT(std::stoll(lines[1]), id);
  EXPECT_GT(std::stoll(lines[3]), std::stoll(lines[2]));
}

TEST_F(TlsTest, PlainHttpGetsNoAnswer) {
  auto server = start();
  ASSERT_TRUE(server->started());
  EXPECT_EQ(test::http_get(server->port(), "/v1/id").status, 0);
  // The server is still fine afterwards.
  EXPECT_EQ(curl(server->port(), {"/healthz"}).exit_code, 0);
}

TEST_F(TlsTest, GrpcOverTlsAndNotWithout) {
  auto server = start();
  ASSERT_TRUE(server->started());
  const std::string target = "127.0.0.1:" + std::to_string(server->grpc_port());
  grpc::SslCredentialsOptions options;
  options.pem_root_certs = test::read_file(cert());
  auto secure = v1::IdService::NewStub(grpc::CreateChannel(target, grpc::SslCredentials(options)));
  grpc::ClientContext context;
  v1::NextIdResponse response;
  const grpc::Status ok = secure->NextId(with_deadline(context), v1::NextIdRequest{}, &response);
  ASSERT_TRUE(ok.ok()) << ok.error_message();
  EXPECT_GT(response.id(), 0u);

  auto plain = v1::IdService::NewStub(
      grpc::CreateChannel(target, grpc::InsecureChannelCredentials()));
  grpc::ClientContext plain_context;
  plain_context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds{3});
  const grpc::Status refused = plain->NextId(&plain_context, v1::NextIdRequest{}, &response);
  EXPECT_FALSE(refused.ok());
}

TEST_F(TlsTest, BadCertificatesAreRefusedAtStart) {
  const auto half = test::run_process({SNOWIDD_PATH, "--tls-cert", cert(), "--check-config"});
  EXPECT_EQ(half.exit_code, 2);
  EXPECT_NE(half.err.find("given together"), std::string::npos) << half.err;

  const std::string garbage = dir.file("garbage.pem");
  ASSERT_EQ(test::run_process({"/bin/sh", "-c", "echo not a certificate > " + garbage}).exit_code,
            0);
  const auto bad = test::run_process({SNOWIDD_PATH, "--state-dir", dir.file("state"), "--http",
                                      "127.0.0.1:0", "--grpc", "127.0.0.1:0", "--tls-cert",
                                      garbage, "--tls-key", key()});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("cannot load certificate"), std::string::npos) << bad.err;
}

}  // namespace
}  // namespace snowid
