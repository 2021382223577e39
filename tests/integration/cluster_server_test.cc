// snowidd in cluster mode against a real etcd started by the test: node ids
// leased with fencing, end to end through the HTTP API.
#include <arpa/inet.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>

#include "certificates.h"
#include "chaos.h"  // wait_until
#include "etcd_coordinator.h"
#include "etcd_process.h"
#include "grpc/health/v1/health.grpc.pb.h"
#include "id_checks.h"
#include "server_process.h"
#include "snowid/decode.h"
#include "snowid/layout.h"
#include "subprocess.h"

namespace snowid {
namespace {

using namespace std::chrono_literals;
using test::http_get;
using test::ServerProcess;

class ClusterServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(etcd.started()) << etcd.why();
    ASSERT_EQ(etcd.mark_new_cluster("t"), "");
  }

  // A node of cluster "t" preferring worker 0, with a short lease.
  std::unique_ptr<ServerProcess> start_node(const std::string& name,
                                            std::vector<std::string> extra = {}) {
    std::vector<std::string> args{"--coordinator",  "etcd",
                                  "--etcd-endpoints", etcd.endpoint(0),
                                  "--cluster",      "t",
                                  "--worker-id",    "0",
                                  "--lease-ttl-s",  "2",
                                  "--lease-safety-margin-ms", "500",
                                  "--state-dir",    dir.file(name)};
    args.insert(args.end(), extra.begin(), extra.end());
    auto server = std::make_unique<ServerProcess>(SNOWIDD_PATH, args);
    return server;
  }

  static nlohmann::json info(const ServerProcess& server) {
    const auto reply = http_get(server.port(), "/v1/info");
    EXPECT_EQ(reply.status, 200) << reply.body;
    return nlohmann::json::parse(reply.body, nullptr, false);
  }

  static std::uint64_t worker_of(Id id) {
    return decode(*preset("twitter"), id)->worker;
  }

  // Up to `count` IDs in batches of 100 (fewer if the node refuses).
  static std::vector<Id> fetch(const ServerProcess& server, int batches) {
    std::vector<Id> ids;
    test::HttpConnection connection(server.port());
    for (int i = 0; i < batches; ++i) {
      if (!connection.send("GET /v1/ids?count=100 HTTP/1.1\r\nHost: x\r\n\r\n")) break;
      const auto reply = connection.read();
      if (reply.status != 200) {
        ADD_FAILURE() << "GET /v1/ids: " << reply.status << " " << reply.body;
        break;
      }
      const auto body = nlohmann::json::parse(reply.body);
      for (const auto& s : body["ids"]) ids.push_back(*parse_id(s.get<std::string>()));
    }
    return ids;
  }

  // Polls GET /v1/id until it answers `status`, for at most `limit`.
  static bool wait_for_status(const ServerProcess& server, int status,
                              std::chrono::milliseconds limit) {
    const auto deadline = std::chrono::steady_clock::now() + limit;
    while (std::chrono::steady_clock::now() < deadline) {
      if (http_get(server.port(), "/v1/id").status == status) return true;
      std::this_thread::sleep_for(50ms);
    }
    return false;
  }

  test::EtcdCluster etcd{1};
  test::TempDir dir;
};

// The incident: several nodes all configured as worker 0. Each gets its own
// node id, and the union of their IDs has no duplicate.
TEST_F(ClusterServerTest, NodesConfiguredAlikeGetDistinctIdsAndNeverCollide) {
  std::vector<std::unique_ptr<ServerProcess>> nodes;
  for (const char* name : {"a", "b", "c"}) nodes.push_back(start_node(name));
  std::set<std::uint64_t> node_ids;
  for (const auto& node : nodes) {
    ASSERT_TRUE(node->started());
    const auto cluster = info(*node)["cluster"];
    EXPECT_EQ(cluster["coordinator"], "etcd");
    EXPECT_EQ(cluster["claim_state"], "held");
    node_ids.insert(cluster["node_id"].get<std::uint64_t>());
  }
  EXPECT_EQ(node_ids, (std::set<std::uint64_t>{0, 1, 2}));

  // A fourth node that must have the id it is configured with (0, like the
  // others) waits, then exits naming the holder.
  auto fourth = start_node("d", {"--node-id-policy", "require", "--claim-timeout-ms", "1500"});
  EXPECT_FALSE(fourth->started());
  EXPECT_EQ(fourth->wait(), 1);
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  const ServerProcess* holder_node = nullptr;
  for (const auto& node : nodes) {
    if (info(*node)["cluster"]["node_id"] == 0) holder_node = node.get();
  }
  ASSERT_NE(holder_node, nullptr);
  const std::string holder = "node id 0 of cluster 't' is held by " + std::string(host) +
                             " pid=" + std::to_string(holder_node->pid());
  EXPECT_NE(fourth->log().find(holder), std::string::npos) << fourth->log();

  std::vector<std::vector<Id>> per_node(nodes.size());
  std::vector<std::thread> clients;
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    clients.emplace_back([&, i] { per_node[i] = fetch(*nodes[i], 50); });
  }
  for (auto& c : clients) c.join();
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    ASSERT_EQ(per_node[i].size(), 5000u);
    EXPECT_EQ(worker_of(per_node[i].front()), info(*nodes[i])["worker_id"].get<std::uint64_t>());
  }
  EXPECT_EQ(test::check_unique_and_increasing(per_node), "");

  const auto metrics = http_get(nodes[0]->port(), "/metrics").body;
  EXPECT_NE(metrics.find("snowid_cluster_claim_held 1"), std::string::npos) << metrics;
  EXPECT_NE(metrics.find("snowid_etcd_requests_total"), std::string::npos);
  // The renewals so far, each in a bucket: the +Inf bucket equals the count.
  const auto renewals = [&](std::string_view sample) -> long long {
    const auto at = metrics.find(sample);
    if (at == std::string::npos) return -1;
    return std::stoll(metrics.substr(at + sample.size()));
  };
  const long long count = renewals("snowid_cluster_renewal_duration_seconds_count ");
  EXPECT_GE(count, 1) << metrics;
  EXPECT_EQ(renewals("snowid_cluster_renewal_duration_seconds_bucket{le=\"+Inf\"} "), count);
  EXPECT_GE(renewals("snowid_cluster_renewal_duration_seconds_bucket{le=\"3.2768\"} "), 0)
      << metrics;
}

// A node frozen (SIGSTOP) past its lease loses its node id to a newcomer,
// which starts above the frozen node's reservation. Resumed, the old node
// refuses at once, re-claims another id, and serves again; no ID repeats.
TEST_F(ClusterServerTest, AFrozenNodeIsFencedAndItsSuccessorNeverRepeatsItsIds) {
  auto old_node = start_node("old");
  ASSERT_TRUE(old_node->started());
  std::vector<Id> before = fetch(*old_node, 20);
  ASSERT_EQ(before.size(), 2000u);
  ASSERT_EQ(worker_of(before.back()), 0u);

  old_node->signal(SIGSTOP);
  std::this_thread::sleep_for(3500ms);  // past the 2 s lease
  auto successor = start_node("new");
  ASSERT_TRUE(successor->started());
  EXPECT_EQ(info(*successor)["cluster"]["node_id"], 0);
  const std::vector<Id> successor_ids = fetch(*successor, 20);
  ASSERT_EQ(successor_ids.size(), 2000u);

  old_node->signal(SIGCONT);
  // Its lease deadline has passed: the very first request is refused.
  const auto refused = http_get(old_node->port(), "/v1/id");
  EXPECT_EQ(refused.status, 503) << refused.body;
  ASSERT_TRUE(wait_for_status(*old_node, 200, 10s)) << old_node->log();
  const std::vector<Id> after = fetch(*old_node, 20);
  ASSERT_EQ(after.size(), 2000u);
  EXPECT_NE(worker_of(after.front()), 0u);
  EXPECT_EQ(info(*old_node)["cluster"]["reclaims"].get<int>(), 1);

  std::vector<Id> old_all = before;
  old_all.insert(old_all.end(), after.begin(), after.end());
  EXPECT_EQ(test::check_unique_and_increasing({old_all, successor_ids}), "");
}

// etcd frozen: the node fences itself within the lease, then recovers by
// itself once etcd answers again.
TEST_F(ClusterServerTest, NodeStopsIssuingWhileEtcdIsGoneAndRecovers) {
  auto node = start_node("n");
  ASSERT_TRUE(node->started());
  std::vector<Id> before = fetch(*node, 5);
  ASSERT_EQ(before.size(), 500u);
  etcd.pause(0);
  EXPECT_TRUE(wait_for_status(*node, 503, 4s));
  EXPECT_EQ(http_get(node->port(), "/readyz").status, 503);
  EXPECT_EQ(http_get(node->port(), "/healthz").status, 200);
  etcd.resume(0);
  ASSERT_TRUE(wait_for_status(*node, 200, 15s)) << node->log();
  // Right after etcd answers again the node may still fence once more (a
  // claim or keep-alive sent into the stalled etcd can come back with little
  // of its lease left, seen under ThreadSanitizer on a loaded machine); it
  // must then be back within a few leases, as here.
  std::vector<Id> after;
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (after.size() < 500 && std::chrono::steady_clock::now() < deadline) {
    const auto reply = http_get(node->port(), "/v1/ids?count=100");
    if (reply.status == 200) {
      const auto body = nlohmann::json::parse(reply.body);
      for (const auto& s : body["ids"]) after.push_back(*parse_id(s.get<std::string>()));
    } else {
      ASSERT_EQ(reply.status, 503) << reply.body;
      std::this_thread::sleep_for(50ms);
    }
  }
  ASSERT_EQ(after.size(), 500u) << "not serving again 10 s after etcd came back: " << node->log();
  // Ready again too. It may fence once more just after, as said above, and
  // a re-claim starts above etcd's clock + lease_ttl + reserve_ahead (the
  // takeover floor), about 5 s here: so the same 10 s as the IDs above.
  test::HttpReply ready;
  const auto ready_deadline = std::chrono::steady_clock::now() + 10s;
  while (std::chrono::steady_clock::now() < ready_deadline) {
    ready = http_get(node->port(), "/readyz");
    if (ready.status == 200) break;
    std::this_thread::sleep_for(50ms);
  }
  EXPECT_EQ(ready.status, 200) << ready.body << "\n" << node->log();
  std::vector<Id> all = before;
  all.insert(all.end(), after.begin(), after.end());
  EXPECT_EQ(test::check_unique_and_increasing({all}), "");
}

// SIGTERM releases the claim and keeps the reservation: the next holder of
// the id starts above everything the first one issued.
TEST_F(ClusterServerTest, GracefulStopReleasesTheIdForTheNextNode) {
  auto first = start_node("first");
  ASSERT_TRUE(first->started());
  const std::vector<Id> first_ids = fetch(*first, 10);
  ASSERT_EQ(first_ids.size(), 1000u);
  first->signal(SIGTERM);
  EXPECT_EQ(first->wait(), 0) << first->log();

  const auto listed = test::run_process(
      {SNOWID_CLI_PATH, "cluster", "list", "--etcd", etcd.endpoint(0), "--cluster", "t"});
  EXPECT_EQ(listed.exit_code, 0) << listed.err;

  auto second = start_node("second");
  ASSERT_TRUE(second->started());
  EXPECT_EQ(info(*second)["cluster"]["node_id"], 0);
  const std::vector<Id> second_ids = fetch(*second, 10);
  ASSERT_EQ(second_ids.size(), 1000u);
  EXPECT_GT(second_ids.front(), first_ids.back());
  EXPECT_EQ(test::check_unique_and_increasing({first_ids, second_ids}), "");
}

// A node started while etcd is down keeps trying and claims once etcd is
// back (a gRPC channel that failed once must not stay failed), and a node
// whose etcd restarts recovers the same way.
TEST_F(ClusterServerTest, ANodeStartedBeforeEtcdClaimsOnceEtcdIsUp) {
  etcd.stop(0);
  std::vector<std::string> argv{SNOWIDD_PATH, "--coordinator", "etcd", "--etcd-endpoints",
                                etcd.endpoint(0), "--cluster", "t", "--lease-ttl-s", "2",
                                "--lease-safety-margin-ms", "500", "--claim-timeout-ms",
                                "20000", "--state-dir", dir.file("early")};
  std::unique_ptr<ServerProcess> node;
  std::thread starter([&] {
    node = std::make_unique<ServerProcess>(
        SNOWIDD_PATH, std::vector<std::string>(argv.begin() + 1, argv.end()));
  });
  std::this_thread::sleep_for(2s);  // several failed attempts first
  ASSERT_TRUE(etcd.restart(0)) << etcd.log(0);
  starter.join();
  ASSERT_TRUE(node->started()) << node->log();
  EXPECT_EQ(http_get(node->port(), "/v1/id").status, 200);

  etcd.stop(0);
  EXPECT_TRUE(wait_for_status(*node, 503, 4s));
  ASSERT_TRUE(etcd.restart(0)) << etcd.log(0);
  EXPECT_TRUE(wait_for_status(*node, 200, 15s)) << node->log();
}

using HealthStatus = grpc::health::v1::HealthCheckResponse::ServingStatus;

// What a node's HTTP and gRPC addresses answered while the node claimed its
// node id.
struct ClaimTimeAnswers {
  int healthz = 0;
  int readyz = 0;
  test::HttpReply id;
  HealthStatus alive = grpc::health::v1::HealthCheckResponse::UNKNOWN;    // service ""
  HealthStatus serving = grpc::health::v1::HealthCheckResponse::UNKNOWN;  // IdService
};

// The standard health service's answer for `service`; UNKNOWN if the call
// failed.
HealthStatus grpc_health(const std::shared_ptr<grpc::ChannelCredentials>& credentials, int port,
                         const std::string& service) {
  auto stub = grpc::health::v1::Health::NewStub(
      grpc::CreateChannel("127.0.0.1:" + std::to_string(port), credentials));
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds{5});
  grpc::health::v1::HealthCheckRequest request;
  request.set_service(service);
  grpc::health::v1::HealthCheckResponse response;
  if (!stub->Check(&context, request, &response).ok()) {
    return grpc::health::v1::HealthCheckResponse::UNKNOWN;
  }
  return response.status();
}

// While a node claims its node id (etcd down at start), its HTTP address
// already answers: /healthz 200, /readyz and the ID routes 503; and its gRPC
// address's health service: "" SERVING, snowid.v1.IdService NOT_SERVING.
// Once etcd is up the claim succeeds and the same addresses serve IDs.
// `get` asks the node's HTTP address for a target (plain HTTP or HTTPS);
// `credentials` are the gRPC channel's.
void expect_probes_answered_during_the_claim(
    test::EtcdCluster& etcd, const test::TempDir& dir, std::vector<std::string> extra,
    const std::function<test::HttpReply(int port, const std::string& target)>& get,
    const std::shared_ptr<grpc::ChannelCredentials>& credentials) {
  etcd.stop(0);
  const std::vector<int> ports = test::free_loopback_ports(2);
  const int port = ports[0], grpc_port = ports[1];
  std::vector<std::string> args{"--coordinator",
                                "etcd",
                                "--etcd-endpoints",
                                etcd.endpoint(0),
                                "--cluster",
                                "probes",
                                "--claim-timeout-ms",
                                "20000",
                                "--state-dir",
                                dir.file("probes"),
                                "--http",
                                "127.0.0.1:" + std::to_string(port),
                                "--grpc",
                                "127.0.0.1:" + std::to_string(grpc_port)};
  args.insert(args.end(), extra.begin(), extra.end());
  std::unique_ptr<ServerProcess> node;
  std::thread starter([&] { node = std::make_unique<ServerProcess>(SNOWIDD_PATH, args); });
  ClaimTimeAnswers during;
  for (int i = 0; i < 200 && during.healthz != 200; ++i) {
    std::this_thread::sleep_for(20ms);
    during.healthz = get(port, "/healthz").status;
  }
  during.readyz = get(port, "/readyz").status;
  during.id = get(port, "/v1/id");
  during.alive = grpc_health(credentials, grpc_port, "");
  during.serving = grpc_health(credentials, grpc_port, "snowid.v1.IdService");
  ASSERT_TRUE(etcd.restart(0)) << etcd.log(0);
  starter.join();
  EXPECT_EQ(during.healthz, 200);
  EXPECT_EQ(during.readyz, 503);
  EXPECT_EQ(during.id.status, 503);
  EXPECT_NE(during.id.body.find("claiming a node id"), std::string::npos) << during.id.body;
  ASSERT_TRUE(node->started()) << node->log();
  EXPECT_EQ(node->port(), port);
  EXPECT_EQ(during.alive, grpc::health::v1::HealthCheckResponse::SERVING);
  EXPECT_EQ(during.serving, grpc::health::v1::HealthCheckResponse::NOT_SERVING);
  EXPECT_EQ(get(port, "/v1/id").status, 200) << node->log();
  EXPECT_EQ(get(port, "/readyz").status, 200);
  EXPECT_EQ(node->grpc_port(), grpc_port);
  EXPECT_TRUE(test::wait_until(
      [&] {
        return grpc_health(credentials, grpc_port, "snowid.v1.IdService") ==
               grpc::health::v1::HealthCheckResponse::SERVING;
      },
      std::chrono::milliseconds{5000}))
      << node->log();
}

TEST_F(ClusterServerTest, AClaimingNodeAnswersProbesOnItsHttpAddress) {
  expect_probes_answered_during_the_claim(
      etcd, dir, {}, [](int port, const std::string& target) { return http_get(port, target); },
      grpc::InsecureChannelCredentials());
}

// The same over TLS, with the listener's certificate: an HTTPS probe (as
// Kubernetes' scheme: HTTPS) is answered during the claim, and a plain-text
// request on that address gets nothing.
TEST_F(ClusterServerTest, AClaimingNodeAnswersHttpsProbesWithItsCertificate) {
  const auto files = test::make_self_signed_certificate(dir.path(), "node");
  int plain_during_claim = -1;
  expect_probes_answered_during_the_claim(
      etcd, dir, {"--tls-cert", files.cert, "--tls-key", files.key},
      [&](int port, const std::string& target) {
        if (plain_during_claim < 0 && target == "/readyz") {
          plain_during_claim = http_get(port, target).status;
        }
        const auto r = test::run_process({"/usr/bin/curl", "-sS", "--max-time", "10", "--cacert",
                                          files.cert, "-w", "\n%{http_code}",
                                          "https://127.0.0.1:" + std::to_string(port) + target});
        test::HttpReply reply;
        const std::size_t last = r.out.rfind('\n');
        if (r.exit_code != 0 || last == std::string::npos) return reply;
        reply.status = std::stoi(r.out.substr(last + 1));
        reply.body = r.out.substr(0, last);
        return reply;
      },
      grpc::SslCredentials(grpc::SslCredentialsOptions{test::read_file(files.cert), "", ""}));
  EXPECT_EQ(plain_during_claim, 0) << "plain HTTP was answered on a TLS address";
}

TEST_F(ClusterServerTest, BadClusterSettingsExitTwoAndUnreachableEtcdExitsOne) {
  for (const std::vector<std::string>& bad :
       {std::vector<std::string>{"--coordinator", "consul"},
        std::vector<std::string>{"--coordinator", "etcd", "--etcd-endpoints", "nohostport"},
        std::vector<std::string>{"--coordinator", "etcd", "--lease-ttl-s", "1"},
        std::vector<std::string>{"--coordinator", "etcd", "--cluster", "a/b"}}) {
    std::vector<std::string> argv{SNOWIDD_PATH, "--state-dir", dir.file("bad"), "--http",
                                  "127.0.0.1:0", "--grpc", "127.0.0.1:0"};
    argv.insert(argv.end(), bad.begin(), bad.end());
    const auto r = test::run_process(argv);
    EXPECT_EQ(r.exit_code, 2) << bad[1] << ": " << r.err;
    EXPECT_EQ(test::split_lines(r.err).size(), 1u) << r.err;
  }
  // Nothing listens on port 1: the node gives up after the claim timeout.
  const auto unreachable = test::run_process(
      {SNOWIDD_PATH, "--state-dir", dir.file("u"), "--http", "127.0.0.1:0", "--grpc",
       "127.0.0.1:0", "--coordinator", "etcd", "--etcd-endpoints", "127.0.0.1:1",
       "--claim-timeout-ms", "1500"});
  EXPECT_EQ(unreachable.exit_code, 1);
  EXPECT_NE(unreachable.err.find("no node id claimed within 1500 ms"), std::string::npos)
      << unreachable.err;
}

// A node whose HTTP or gRPC address is taken exits 2 naming it before it
// claims anything: no claim record is left to hold the id for a lease.
TEST_F(ClusterServerTest, AnAddressInUseEndsTheStartBeforeAClaim) {
  const int taken = test::free_loopback_ports(1)[0];
  const int holder = ::socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(holder, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<std::uint16_t>(taken));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(holder, reinterpret_cast<sockaddr*>(&address), sizeof address), 0);
  ASSERT_EQ(::listen(holder, 1), 0);
  const std::string in_use = "127.0.0.1:" + std::to_string(taken);
  for (const std::string listener : {"http", "grpc"}) {
    const std::vector<std::string> argv{
        SNOWIDD_PATH, "--state-dir", dir.file(listener),
        "--http", listener == "http" ? in_use : "127.0.0.1:0",
        "--grpc", listener == "grpc" ? in_use : "127.0.0.1:0",
        "--coordinator", "etcd", "--etcd-endpoints", etcd.endpoint(0), "--cluster", "t"};
    const auto r = test::run_process(argv);
    EXPECT_EQ(r.exit_code, 2) << listener << ": " << r.err;
    EXPECT_NE(r.err.find("cannot listen on " + in_use), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("no node id was claimed"), std::string::npos) << r.err;
  }
  ::close(holder);
  EtcdOptions options;
  options.endpoints = etcd.endpoints();
  options.cluster = "t";
  options.layout = *preset("twitter");
  auto listed = list_cluster(options);
  ASSERT_TRUE(listed.ok()) << listed.error().message;
  EXPECT_TRUE(listed->empty()) << listed->size() << " node ids claimed";
}

// snowidd against an etcd that demands TLS with a client certificate and a
// password (read from a file, as recommended): it claims, serves, and gives
// the id back on SIGTERM.
TEST(ClusterServerSecured, ServesThroughAnEtcdWithTlsAndPasswordAuthentication) {
  test::EtcdCluster etcd(1, /*tls=*/true);
  ASSERT_TRUE(etcd.started()) << etcd.why();
  ASSERT_EQ(etcd.enable_auth("snowid", "s3cret", "/snowid/"), "");
  test::TempDir dir;
  { std::ofstream(dir.file("etcd-password")) << "s3cret\n"; }
  ServerProcess node(SNOWIDD_PATH, {"--coordinator",
                                    "etcd",
                                    "--etcd-endpoints",
                                    etcd.endpoint(0),
                                    "--cluster",
                                    "secure",
                                    "--etcd-tls-ca",
                                    etcd.tls_ca(),
                                    "--etcd-tls-cert",
                                    etcd.client_certificate().cert,
                                    "--etcd-tls-key",
                                    etcd.client_certificate().key,
                                    "--etcd-user",
                                    "snowid",
                                    "--etcd-password-file",
                                    dir.file("etcd-password"),
                                    "--lease-ttl-s",
                                    "2",
                                    "--lease-safety-margin-ms",
                                    "500",
                                    "--claim-timeout-ms",
                                    "10000",
                                    "--state-dir",
                                    dir.file("n")});
  ASSERT_TRUE(node.started()) << node.log();
  EXPECT_EQ(http_get(node.port(), "/v1/id").status, 200);
  EXPECT_EQ(http_get(node.port(), "/readyz").status, 200);
  node.signal(SIGTERM);
  EXPECT_EQ(node.wait(), 0) << node.log();
  EtcdOptions options;
  options.endpoints = etcd.endpoints();
  options.cluster = "secure";
  options.layout = *preset("twitter");
  options.user = "snowid";
  options.password = "s3cret";
  options.tls_ca_file = etcd.tls_ca();
  options.tls_cert_file = etcd.client_certificate().cert;
  options.tls_key_file = etcd.client_certificate().key;
  auto listed = list_cluster(options);
  ASSERT_TRUE(listed.ok()) << listed.error().message;
  ASSERT_EQ(listed->size(), 1u);
  EXPECT_FALSE(listed->front().claimed) << "SIGTERM did not release the claim";
  EXPECT_GT(listed->front().reservation.count(), 0);
}

}  // namespace
}  // namespace snowid
