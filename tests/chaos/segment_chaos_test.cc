// Segment mode served by two snowidd nodes on one throw-away PostgreSQL
// cluster (tests/support/postgres_suite.h) under concurrent HTTP load: the
// nodes racing for ranges of one row, and the database stopped (immediate
// mode, like a crash) and started again mid-run. No number may repeat across
// the nodes and each connection's numbers must strictly increase.
#include <gtest/gtest.h>

#include <thread>

#include "chaos.h"
#include "postgres_suite.h"
#include "server_process.h"
#include "subprocess.h"

namespace snowid {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using test::SteadyClock;

// Service must be back this soon after the database is (the allocator
// retries every 200 ms here, and reconnects).
constexpr milliseconds kRecoveryBound{5000};

// Two snowidd nodes on one PostgreSQL database, each with its own state
// directory, and the scenario's record.
class SegmentChaos : public test::PostgresSuite {
 protected:
  void TearDown() override { scenario.finish(); }

  // Makes `tag` with `snowid segment create` and starts the two nodes.
  void start_nodes(const std::string& tag, int step, const std::vector<std::string>& extra) {
    const auto created =
        test::run_process({SNOWID_CLI_PATH, "segment", "create", tag, "--step",
                           std::to_string(step), "--segment-store", postgres_->url()},
                          {}, seconds{20});
    ASSERT_EQ(created.exit_code, 0) << created.err;
    for (int n = 0; n < 2; ++n) {
      std::vector<std::string> args = {
          "--segment-store", postgres_->url(), "--worker-id",
          std::to_string(n), "--state-dir",    scenario.dir.file("node" + std::to_string(n))};
      args.insert(args.end(), extra.begin(), extra.end());
      nodes.push_back(std::make_unique<test::ServerProcess>(SNOWIDD_PATH, args));
      ASSERT_TRUE(nodes.back()->started()) << nodes.back()->log();
      addresses[n].set(nodes.back()->port(), nodes.back()->grpc_port());
    }
  }
  // Two HTTP clients per node asking for `tag` in batches of 10.
  test::LoadOptions clients(const std::string& tag) const {
    test::LoadOptions options;
    options.http_clients = 2;
    options.grpc_clients = 0;
    options.http_target = "/v1/segment/" + tag + "?count=10&format=text";
    return options;
  }
  std::vector<test::NodeAddress*> both() { return {&addresses[0], &addresses[1]}; }
  double metric(std::size_t node, const std::string& series) const {
    return test::metric(nodes[node]->port(), series);
  }

  test::Scenario scenario;
  test::NodeAddress addresses[2];
  std::vector<std::unique_ptr<test::ServerProcess>> nodes;
};

TEST_F(SegmentChaos, TwoNodesUnderLoadNeverShareANumber) {
  scenario.record.scenario = "segment_two_nodes_racing";
  scenario.record.fault = "two nodes race for ranges of one tag (steps of 50 to 400)";
  scenario.record.injection = "2 snowidd nodes, 4 HTTP clients, one PostgreSQL row";
  scenario.record.expected = "no number shared between the nodes, no refusal";
  start_nodes("pg.load", 50, {"--segment-max-step", "400"});
  auto options = clients("pg.load");
  options.requests = 300;
  options.pause = milliseconds{0};
  test::Load load(both(), options);
  load.wait();
  EXPECT_EQ(load.unexpected(), "");
  EXPECT_EQ(load.refused(0) + load.refused(1), 0u) << nodes[0]->log();
  const auto sources = load.sources();
  for (const auto& source : sources) EXPECT_EQ(source.ids.size(), 3000u) << source.name;
  scenario.count(load);
  scenario.check(sources);
  for (std::size_t n = 0; n < nodes.size(); ++n) {
    EXPECT_GT(metric(n, "snowid_segment_fetches_total{tag=\"pg.load\"}"), 5);
  }
}

TEST_F(SegmentChaos, NodesServeFromBuffersWhileTheDatabaseIsDownThenRecover) {
  scenario.record.scenario = "segment_database_down";
  scenario.record.fault = "PostgreSQL stops (immediate mode) under load and starts again";
  scenario.record.injection = "pg_ctl stop -m immediate, then pg_ctl start, with 2 nodes serving";
  scenario.record.expected =
      "both nodes serve from their buffered ranges, then 503 with /readyz/segment 503 and /readyz "
      "200, then serve again once the database is back";
  start_nodes("pg.outage", 100,
              {"--segment-max-step", "400", "--segment-request-timeout-ms", "500",
               "--segment-store-timeout-ms", "1000", "--segment-retry-max-ms", "200"});
  auto buffered = [&](std::size_t n) {
    return metric(n, "snowid_segment_buffered_numbers{tag=\"pg.outage\"}");
  };
  auto options = clients("pg.outage");
  options.pause = milliseconds{1};
  test::Load load(both(), options);

  // Load for a while, then pause it while the database goes down, so that
  // what is served afterwards provably comes from the buffers.
  std::this_thread::sleep_for(milliseconds{300});
  load.pause(true);
  const bool buffers_filled =
      test::wait_until([&] { return buffered(0) > 0 && buffered(1) > 0; }, seconds{10});
  std::this_thread::sleep_for(milliseconds{50});
  ASSERT_TRUE(postgres_->stop(true)) << postgres_->error();
  const auto served_at_stop = load.served_counts();
  load.pause(false);

  const bool both_refusing =
      test::wait_until([&] { return load.refused(0) > 0 && load.refused(1) > 0; }, seconds{15});
  const bool served_while_down =
      load.served(0) > served_at_stop[0] && load.served(1) > served_at_stop[1];
  std::vector<int> readyz_while_down, segment_readyz_while_down;
  std::vector<double> reachable_while_down;
  for (const auto& node : nodes) {
    readyz_while_down.push_back(test::http_get(node->port(), "/readyz").status);
    segment_readyz_while_down.push_back(test::http_get(node->port(), "/readyz/segment").status);
    reachable_while_down.push_back(test::metric(node->port(), "snowid_segment_store_reachable"));
  }

  ASSERT_TRUE(postgres_->start()) << postgres_->error();
  const auto fault_end = SteadyClock::now();
  const bool recovered =
      load.wait_served(load.served_counts(), 100, seconds{20}) &&
      test::wait_until(
          [&] {
            return test::http_get(nodes[0]->port(), "/readyz/segment").status == 200 &&
                   test::http_get(nodes[1]->port(), "/readyz/segment").status == 200;
          },
          seconds{20});
  std::this_thread::sleep_for(milliseconds{200});
  load.stop();

  EXPECT_TRUE(buffers_filled);
  EXPECT_TRUE(served_while_down) << "served at stop " << served_at_stop[0] << "/"
                                 << served_at_stop[1];
  EXPECT_TRUE(both_refusing);
  EXPECT_EQ(readyz_while_down, (std::vector<int>{200, 200})) << "the generator is fine";
  EXPECT_EQ(segment_readyz_while_down, (std::vector<int>{503, 503}));
  EXPECT_EQ(reachable_while_down, (std::vector<double>{0, 0}));
  EXPECT_TRUE(recovered);
  EXPECT_EQ(load.unexpected(), "");
  const auto recovery = test::recovery_time(load.samples(), fault_end);
  ASSERT_TRUE(recovery.has_value()) << "never served again";
  scenario.record.recovery_ms = recovery->count();
  EXPECT_LE(*recovery, kRecoveryBound);
  for (std::size_t n = 0; n < nodes.size(); ++n) {
    EXPECT_GT(metric(n, "snowid_segment_store_errors_total{tag=\"pg.outage\"}"), 0);
    EXPECT_GT(metric(n, "snowid_segment_requests_waited_total{tag=\"pg.outage\"}"), 1);
  }
  scenario.count(load);
  scenario.check(load.sources());
}

// Issue "Hardening", item 20: a client of a node whose database is down is
// told that, not where the database lives or what its driver said.
TEST_F(SegmentChaos, RefusalsWhileTheDatabaseIsDownNameNoDatabaseDetails) {
  scenario.record.scenario = "hardening/20/segment_503_body";
  scenario.record.fault = "PostgreSQL down and a tag's buffers used up";
  scenario.record.injection = "pg_ctl stop -m immediate; requests until 503";
  scenario.record.expected =
      "503 bodies (HTTP and the gRPC message) and /readyz bodies name the tag and the store's "
      "state but not its host, port or driver text; /v1/info and the log keep the details";
  start_nodes("pg.quiet", 10,
              {"--segment-request-timeout-ms", "300", "--segment-store-timeout-ms", "500",
               "--segment-retry-max-ms", "200"});
  ASSERT_TRUE(postgres_->stop(true)) << postgres_->error();
  const std::string url = postgres_->url();
  // libpq names the port in its own words ("port 41234"): look for the number.
  const std::string host_port =
      url.substr(url.find('@') + 1, url.find('/', url.find('@')) - url.find('@') - 1);
  const std::string port = host_port.substr(host_port.rfind(':') + 1);
  test::HttpReply refused;
  for (int i = 0; i < 200 && refused.status != 503; ++i) {
    refused = test::http_get(nodes[0]->port(), "/v1/segment/pg.quiet?count=5");
    ++scenario.record.answers;
  }
  ASSERT_EQ(refused.status, 503) << refused.body;
  ++scenario.record.refused;
  EXPECT_NE(refused.body.find("pg.quiet"), std::string::npos) << refused.body;
  EXPECT_EQ(refused.body.find(port), std::string::npos) << refused.body;
  const auto ready = test::http_get(nodes[0]->port(), "/readyz/segment");
  EXPECT_EQ(ready.status, 503);
  EXPECT_EQ(ready.body.find(port), std::string::npos) << ready.body;
  const auto info = test::http_get(nodes[0]->port(), "/v1/info");
  EXPECT_NE(info.body.find("store_state"), std::string::npos) << info.body;
  EXPECT_TRUE(test::wait_until(
      [&] { return nodes[0]->log().find("segment requests refused") != std::string::npos; },
      seconds{5}))
      << nodes[0]->log();
  ASSERT_TRUE(postgres_->start()) << postgres_->error();
}

}  // namespace
}  // namespace snowid
