// The etcd coordinator against a real etcd started by the test: claims,
// races, take-over above the old reservation, loss of the claim, the
// self-fence, graceful release, failover between members, the peer clock
// check and `snowid cluster`. Leases are 2-3 s so that every test is short.
#include "etcd_coordinator.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <memory>
#include <thread>
#include <vector>

#include "etcd_claim.h"
#include "etcd_client.h"
#include "etcd_process.h"
#include "etcd_server_time.h"
#include "fault_proxy.h"
#include "leased_store_contract.h"
#include "subprocess.h"

namespace snowid {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using std::chrono::steady_clock;

using test::eventually;
using test::small_layout;
using test::wall_now;

class EtcdTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(etcd_.started()) << etcd_.why();
    client_ = std::move(*coord::EtcdClient::connect(options()));
    wait_until_answering();
  }

  // A member's first requests can take longer than a test's deadline on a
  // loaded machine (under ThreadSanitizer, say), or after it started again:
  // waits until one answers.
  void wait_until_answering() {
    etcdserverpb::RangeRequest probe;
    probe.set_key("/snowid/probe");
    ASSERT_TRUE(eventually([&] { return client_->range(probe).ok(); }, milliseconds{10000}))
        << "etcd never answered a Range";
  }

  EtcdOptions options(std::optional<std::uint64_t> preferred = std::nullopt) const {
    EtcdOptions o;
    o.endpoints = etcd_.endpoints();
    o.cluster = ::testing::UnitTest::GetInstance()->current_test_info()->name();
    o.share_id_space = true;  // a cluster per test, one layout, one store
    o.layout = small_layout();
    o.preferred_node_id = preferred;
    o.lease_ttl = seconds{2};
    o.safety_margin = milliseconds{500};
    o.request_timeout = milliseconds{1000};
    o.advertised_addresses = {"127.0.0.1:8080"};
    return o;
  }

  // This store for the bodies every leasing store shares.
  test::LeasedStoreUnderTest store() {
    auto store = test::describe_store<EtcdOptions>(
        "etcd", "--etcd", etcd_.endpoint(0),
        [this](std::optional<std::uint64_t> p) { return options(p); }, &make_etcd_coordinator,
        [this](std::uint64_t id) { return stored_reservation(id); },
        [this](std::uint64_t id) { return claim_exists(id); }, "failed on every endpoint",
        "--redis");
    store.mark_new_cluster = [this] { ASSERT_EQ(etcd_.mark_new_cluster(options().cluster), ""); };
    store.lose_data = [this] {
      // As `etcdctl del --prefix /snowid/<cluster>/`: the holders' leases live on.
      etcdserverpb::DeleteRangeRequest request;
      const std::string prefix = "/snowid/" + options().cluster + "/";
      request.set_key(prefix);
      request.set_range_end(coord::prefix_end(prefix));
      ASSERT_TRUE(client_->delete_range(request).ok());
    };
    store.make_claim = [this](std::uint64_t preferred) {
      return std::unique_ptr<coord::LeasedClaim>(
          std::make_unique<coord::EtcdClaim>(*client_, options(preferred)));
    };
    store.back_up = [this] {
      // `etcdctl snapshot save` of the running member; the restore puts the
      // snapshot in place of its data (etcdctl snapshot restore) and starts
      // it again on its ports, while the holders' clients stay connected.
      auto backup = std::make_shared<test::TempDir>();
      const std::string file = backup->file("snapshot.db");
      EXPECT_EQ(etcd_.snapshot(file), "");
      return std::function<void()>([this, backup, file] {
        ASSERT_TRUE(etcd_.restore(0, file)) << etcd_.log(0);
        wait_until_answering();
      });
    };
    return store;
  }

  std::unique_ptr<Coordinator> make(std::optional<std::uint64_t> preferred) const {
    auto made = make_etcd_coordinator(options(preferred));
    EXPECT_TRUE(made.ok()) << (made.ok() ? "" : made.error().message);
    return made.ok() ? std::move(*made) : nullptr;
  }

  // The reservation stored for `node_id`, 0 if none.
  milliseconds stored_reservation(std::uint64_t node_id) {
    etcdserverpb::RangeRequest request;
    request.set_key(coord::reservation_key(options().cluster, node_id));
    auto found = client_->range(request);
    EXPECT_TRUE(found.ok());
    if (!found.ok() || found->kvs_size() == 0) return milliseconds{0};
    return milliseconds{std::stoll(found->kvs(0).value())};
  }

  bool claim_exists(std::uint64_t node_id) {
    etcdserverpb::RangeRequest request;
    request.set_key(coord::claim_key(options().cluster, node_id));
    auto found = client_->range(request);
    return found.ok() && found->kvs_size() > 0;
  }

  test::EtcdCluster etcd_{1};
  std::unique_ptr<coord::EtcdClient> client_;
};

SNOWID_LEASED_STORE_TESTS(EtcdTest)

TEST_F(EtcdTest, ClaimsThePreferredIdAndStartsAboveANewClustersFirstReservation) {
  // lease_ttl + reserve_ahead ahead of the clock: etcd cannot tell a cluster
  // new to it from one whose keys it lost. etcd's time (Date + 1 s) may lie a
  // second ahead.
  auto coordinator = test::claims_the_preferred_id_of_a_new_cluster(store(), milliseconds{5000},
                                                                    milliseconds{1000});
  ASSERT_TRUE(coordinator->stats().lease_time_left.has_value());
  EXPECT_GT(*coordinator->stats().lease_time_left, milliseconds{1000});
}

// A claimer whose clock is a minute behind writes the created marker after
// etcd lost every snowid key: etcd's own time (the Date of its HTTP answers)
// keeps the floor up.
TEST_F(EtcdTest, AClaimerWhoseClockIsBehindDoesNotLowerTheFloorOfALostCluster) {
  coord::EtcdClaim earlier(*client_, options(1));
  ASSERT_TRUE(earlier.claim(std::nullopt).ok());
  ASSERT_TRUE(earlier.release(std::nullopt).ok());
  ASSERT_EQ(etcd_.delete_snowid_keys(), "");
  ManualClock behind(wall_now() - milliseconds{60'000});
  EtcdOptions o = options(1);
  o.clock = &behind;
  const milliseconds before = wall_now();
  // Refused with the check on, saying so; with it off, etcd's clock keeps
  // the floor up.
  coord::EtcdClaim refused(*client_, o);
  auto refusal = refused.claim(std::nullopt);
  ASSERT_FALSE(refusal.ok());
  EXPECT_NE(refusal.error().message.find("behind etcd's clock"), std::string::npos)
      << refusal.error().message;
  o.max_peer_clock_offset = milliseconds{0};
  coord::EtcdClaim holder(*client_, o);
  auto claim = holder.claim(std::nullopt);
  ASSERT_TRUE(claim.ok()) << claim.error().message;
  EXPECT_EQ(holder.marker_time_unread(), "");
  // Date has whole seconds: a second of slack.
  EXPECT_GE(claim->store_created, before - milliseconds{1000});
  EXPECT_GE(claim->floor, before + milliseconds{5000 - 1000});  // lease_ttl + reserve_ahead
  EXPECT_TRUE(holder.release(std::nullopt).ok());
}

TEST_F(EtcdTest, ServerTimeIsTheMembersClockOrAnErrorNamingEveryMember) {
  const milliseconds before = wall_now();
  auto time = coord::etcd_server_time(options());
  ASSERT_TRUE(time.ok()) << time.error().message;
  const auto told = std::chrono::duration_cast<milliseconds>(time->time_since_epoch());
  EXPECT_GE(told, before - milliseconds{1000});
  EXPECT_LE(told, wall_now());

  EtcdOptions nobody = options();
  nobody.endpoints = {"127.0.0.1:1"};  // nothing listens there
  auto unread = coord::etcd_server_time(nobody);
  ASSERT_FALSE(unread.ok());
  EXPECT_NE(unread.error().message.find("127.0.0.1:1"), std::string::npos)
      << unread.error().message;
}

TEST_F(EtcdTest, RacingClaimersExactlyOneWinsThePreferredId) {
  for (int round = 0; round < 5; ++round) {
    EtcdOptions o = options(3);
    o.cluster += std::to_string(round);
    auto a = coord::EtcdClient::connect(o), b = coord::EtcdClient::connect(o);
    coord::EtcdClaim claim_a(**a, o), claim_b(**b, o);
    std::atomic<int> ready{0};
    Result<Claim> result_a = invalid_argument("not run"), result_b = invalid_argument("not run");
    auto race = [&ready](coord::EtcdClaim& claim, Result<Claim>& result) {
      ready.fetch_add(1);
      while (ready.load() < 2) {
      }
      result = claim.claim(std::nullopt);
    };
    std::thread ta(race, std::ref(claim_a), std::ref(result_a));
    std::thread tb(race, std::ref(claim_b), std::ref(result_b));
    ta.join();
    tb.join();
    ASSERT_TRUE(result_a.ok()) << result_a.error().message;
    ASSERT_TRUE(result_b.ok()) << result_b.error().message;
    EXPECT_NE(result_a->node_id, result_b->node_id);
    EXPECT_EQ((result_a->node_id == 3) + (result_b->node_id == 3), 1) << "round " << round;
    EXPECT_TRUE(claim_a.release(std::nullopt).ok());
    EXPECT_TRUE(claim_b.release(std::nullopt).ok());
  }
}

TEST_F(EtcdTest, TakeOverStartsStrictlyAboveTheOldReservation) {
  // The old holder vanishes without a word; its lease ends (revoked here, as
  // an expiry would) while its reservation stays.
  coord::EtcdClaim old_holder(*client_, options(1));
  ASSERT_TRUE(old_holder.claim(std::nullopt).ok());
  test::a_take_over_starts_above_the_old_reservation(
      store(), old_holder, [&] { ASSERT_TRUE(client_->lease_revoke(old_holder.lease_id()).ok()); });
}

TEST_F(EtcdTest, ReservationExtensionFailsOnceTheLeaseIsRevoked) {
  coord::EtcdClaim holder(*client_, options(0));
  ASSERT_TRUE(holder.claim(std::nullopt).ok());
  const milliseconds reservation = holder.reservation();
  ASSERT_TRUE(client_->lease_revoke(holder.lease_id()).ok());  // by another client

  const coord::StepResult extended = holder.extend_reservation(/*force=*/true);
  EXPECT_EQ(extended.outcome, coord::StepOutcome::kClaimLost) << extended.message;
  EXPECT_EQ(holder.keep_alive().outcome, coord::StepOutcome::kClaimLost);
  EXPECT_EQ(stored_reservation(0), reservation);  // untouched by the failed extension
}

TEST_F(EtcdTest, ReservationExtensionFailsOnceTheLeaseExpires) {
  coord::EtcdClaim holder(*client_, options(0));
  ASSERT_TRUE(holder.claim(std::nullopt).ok());
  const milliseconds reservation = holder.reservation();
  // No keep-alives: the 2 s lease runs out and etcd deletes the claim.
  ASSERT_TRUE(eventually([&] { return !claim_exists(0); }, milliseconds{5000}));
  EXPECT_EQ(holder.extend_reservation(/*force=*/true).outcome, coord::StepOutcome::kClaimLost);
  EXPECT_EQ(stored_reservation(0), reservation);
}

TEST_F(EtcdTest, SelfFencesBeforeTheLeaseCanExpireAndReclaimsAfter) {
  auto coordinator = make(2);
  ASSERT_TRUE(coordinator->claim().ok());
  ASSERT_TRUE(eventually([&] { return coordinator->stats().store_requests >= 4; },
                         milliseconds{3000}));  // a keep-alive went through
  // Each id's reservation as etcd holds it just before the hang. Only this
  // coordinator writes under this cluster, and not while etcd hangs, so a
  // reservation can only be higher than this when the re-claim reads it.
  std::vector<milliseconds> reservation_before(std::uint64_t{1} << small_layout().worker_bits);
  for (std::uint64_t id = 0; id < reservation_before.size(); ++id) {
    reservation_before[id] = stored_reservation(id);
  }
  ASSERT_GT(reservation_before[2], milliseconds{0});
  etcd_.pause(0);  // etcd hangs: keep-alives time out
  const auto paused = steady_clock::now();
  // Deadline = send time of the last acknowledged keep-alive + 2 s TTL - 0.5 s margin.
  ASSERT_TRUE(eventually([&] { return !coordinator->may_issue(); }, milliseconds{3000}));
  const auto fenced_after = steady_clock::now() - paused;
  EXPECT_LT(fenced_after, milliseconds{1600});
  // The last reservation it knew etcd to hold for id 2 (a later extension,
  // if one reached etcd unanswered, can only raise what the re-claim reads).
  const milliseconds reservation_after_fence = coordinator->reservation();
  ASSERT_TRUE(eventually([&] { return coordinator->stats().fencing_events == 1; },
                         milliseconds{3000}));
  // Given up when the renewal that waited past the deadline returns (one
  // request timeout, 1 s), before any further store call.
  EXPECT_LT(steady_clock::now() - paused, milliseconds{3000});
  EXPECT_EQ(coordinator->stats().state, ClaimState::kReclaiming);
  EXPECT_FALSE(coordinator->may_issue());

  etcd_.resume(0);
  ASSERT_TRUE(eventually([&] { return coordinator->may_issue(); }, milliseconds{10000}))
      << "no re-claim after etcd came back";
  EXPECT_EQ(coordinator->claim_generation(), 2u);
  const CoordinatorStats stats = coordinator->stats();
  EXPECT_EQ(stats.reclaims, 1u);
  EXPECT_GT(stats.store_errors, 0u);
  // Whatever id it got, it starts at or above the reservation that id had
  // (its own old one, if it got id 2 back, extended up to the hang at the
  // latest), and its new reservation lies above that.
  auto claim = coordinator->current_claim();
  ASSERT_TRUE(claim.has_value());
  ASSERT_LT(claim->node_id, reservation_before.size());
  milliseconds had = reservation_before[claim->node_id];
  if (claim->node_id == 2) had = std::max(had, reservation_after_fence);
  EXPECT_GE(claim->floor, had) << "node id " << claim->node_id;
  // The first reservation is the floor, less the store clock's grain.
  EXPECT_GE(*claim->ceiling + milliseconds{1000}, claim->floor);
}

TEST_F(EtcdTest, RefusesToStartWhenTheClockIsFarFromThePeers) {
  // Two live peers whose clocks read a minute ahead of ours.
  auto lease = client_->lease_grant(seconds{10});
  ASSERT_TRUE(lease.ok());
  for (std::uint64_t id : {0u, 1u}) {
    coord::ClaimRecord peer;
    peer.host = "peer";
    peer.instance = "peer" + std::to_string(id);
    peer.wall_time = wall_now() + milliseconds{60'000};
    etcdserverpb::PutRequest put;
    put.set_key(coord::claim_key(options().cluster, id));
    put.set_value(peer.to_json());
    put.set_lease(lease->id());
    ASSERT_TRUE(client_->put(put).ok());
  }
  auto coordinator = make(std::nullopt);
  auto refused = coordinator->claim();
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message.find("s behind the mean of the 2 live peers"),
            std::string::npos)
      << refused.error().message;
  EXPECT_NE(refused.error().message.find("60."), std::string::npos) << refused.error().message;

  EtcdOptions tolerant = options();
  tolerant.max_peer_clock_offset = milliseconds{120'000};
  auto accepted = (*make_etcd_coordinator(tolerant))->claim();
  ASSERT_TRUE(accepted.ok()) << accepted.error().message;
  EXPECT_EQ(accepted->node_id, 2u);
}

TEST(EtcdFailover, KeepsTheClaimWhenAMemberStops) {
  test::EtcdCluster etcd(3);
  ASSERT_TRUE(etcd.started()) << etcd.why();
  ASSERT_EQ(etcd.mark_new_cluster("failover"), "");  // its reservation soon needs raising
  EtcdOptions options;
  options.endpoints = etcd.endpoints();
  options.cluster = "failover";
  options.layout = small_layout();
  options.lease_ttl = seconds{3};
  options.safety_margin = milliseconds{500};
  options.request_timeout = milliseconds{1000};
  auto coordinator = std::move(*make_etcd_coordinator(options));
  // A cluster just started may still be settling its leader (slowly, under a
  // sanitizer): the first claim is retried until the cluster answers.
  ASSERT_TRUE(eventually([&] { return coordinator->claim().ok(); }, milliseconds{10000}));
  const milliseconds first_reservation = coordinator->reservation();

  etcd.stop(0);  // the member the client talks to first
  const auto stopped = steady_clock::now();
  bool issuable_throughout = true;
  while (steady_clock::now() - stopped < milliseconds{4000}) {
    issuable_throughout = issuable_throughout && coordinator->may_issue();
    std::this_thread::sleep_for(milliseconds{20});
  }
  EXPECT_TRUE(issuable_throughout);
  const CoordinatorStats stats = coordinator->stats();
  EXPECT_EQ(stats.fencing_events, 0u);
  EXPECT_EQ(stats.lost_claims, 0u);
  // Extended through another member, once the clock neared the floor (the
  // first reservation): lease_ttl + reserve_ahead after the claim.
  EXPECT_TRUE(eventually([&] { return coordinator->reservation() > first_reservation; },
                         milliseconds{6000}));
  EXPECT_TRUE(coordinator->release(std::nullopt).ok());
}


// Options for a secured cluster: short lease, short deadlines.
EtcdOptions secured_options(const test::EtcdCluster& etcd, const std::string& cluster) {
  EtcdOptions options;
  options.endpoints = etcd.endpoints();
  options.cluster = cluster;
  options.layout = small_layout();
  options.lease_ttl = seconds{2};
  options.safety_margin = milliseconds{500};
  options.request_timeout = milliseconds{1000};
  return options;
}

// A member that takes 1.5 s to connect to (far away, or overloaded): the
// claim waits for the connection within its request timeout instead of
// giving each connection attempt too little time ever to complete.
TEST(EtcdSlowMember, ClaimsThroughAMemberThatTakesLongToConnectTo) {
  test::EtcdCluster etcd(1);
  ASSERT_TRUE(etcd.started()) << etcd.why();
  const std::string endpoint = etcd.endpoints().front();
  const int etcd_port = std::stoi(endpoint.substr(endpoint.rfind(':') + 1));
  test::FaultProxy link(etcd_port, milliseconds{1500});
  ASSERT_NE(link.port(), 0);
  EtcdOptions options = secured_options(etcd, "slow");
  options.endpoints = {"127.0.0.1:" + std::to_string(link.port())};
  options.request_timeout = milliseconds{5000};
  auto coordinator = std::move(*make_etcd_coordinator(options));
  auto claim = coordinator->claim();
  ASSERT_TRUE(claim.ok()) << claim.error().message;
  EXPECT_TRUE(coordinator->may_issue());
  EXPECT_TRUE(coordinator->release(std::nullopt).ok());
}

// etcd that only speaks TLS and demands a client certificate.
TEST(EtcdSecured, ClaimsOverTlsWithAClientCertificateAndIsRefusedWithout) {
  test::EtcdCluster etcd(1, /*tls=*/true);
  ASSERT_TRUE(etcd.started()) << etcd.why();
  EtcdOptions options = secured_options(etcd, "tls");
  options.tls_ca_file = etcd.tls_ca();
  options.tls_cert_file = etcd.client_certificate().cert;
  options.tls_key_file = etcd.client_certificate().key;
  auto coordinator = std::move(*make_etcd_coordinator(options));
  auto claim = coordinator->claim();
  ASSERT_TRUE(claim.ok()) << claim.error().message;
  EXPECT_TRUE(coordinator->may_issue());
  auto listed = list_cluster(options);
  ASSERT_TRUE(listed.ok()) << listed.error().message;
  EXPECT_EQ(listed->size(), 1u);
  // etcd's time is read over TLS too (the created marker holds it).
  auto etcd_time = coord::etcd_server_time(options);
  EXPECT_TRUE(etcd_time.ok()) << etcd_time.error().message;

  EtcdOptions no_certificate = options;
  no_certificate.tls_cert_file.clear();
  no_certificate.tls_key_file.clear();
  EXPECT_FALSE((*make_etcd_coordinator(no_certificate))->claim().ok());
  EtcdOptions plain = no_certificate;
  plain.tls_ca_file.clear();
  EXPECT_FALSE((*make_etcd_coordinator(plain))->claim().ok());
  EXPECT_TRUE(coordinator->release(std::nullopt).ok());
}

// etcd with authentication: a user whose role may only touch /snowid/ claims,
// extends and releases; a quiet client whose token expired (etcd here drops
// tokens after 2 s unused) signs in again by itself; a wrong password is a
// clear error.
TEST(EtcdSecured, AuthenticatesWithAPasswordAndSignsInAgainAfterTheTokenExpires) {
  test::EtcdCluster etcd(1);
  ASSERT_TRUE(etcd.started()) << etcd.why();
  ASSERT_EQ(etcd.mark_new_cluster("auth"), "");  // its first reservation soon needs raising
  ASSERT_EQ(etcd.enable_auth("snowid", "s3cret", "/snowid/"), "");
  EtcdOptions options = secured_options(etcd, "auth");
  options.user = "snowid";
  options.password = "s3cret";
  auto coordinator = std::move(*make_etcd_coordinator(options));
  auto claim = coordinator->claim();
  ASSERT_TRUE(claim.ok()) << claim.error().message;
  const milliseconds first = coordinator->reservation();
  // Raised once the clock nears the floor, the first reservation.
  EXPECT_TRUE(eventually([&] { return coordinator->reservation() > first; }, milliseconds{9000}));

  auto client = std::move(*coord::EtcdClient::connect(options));
  etcdserverpb::RangeRequest claims;
  claims.set_key(coord::claims_prefix("auth"));
  claims.set_range_end(coord::prefix_end(coord::claims_prefix("auth")));
  auto before = client->range(claims);
  ASSERT_TRUE(before.ok()) << before.error().message;
  EXPECT_EQ(before->kvs_size(), 1);
  const std::uint64_t signed_in = client->counters().sign_ins.load();
  EXPECT_GE(signed_in, 1u);
  std::this_thread::sleep_for(milliseconds{3500});
  auto after = client->range(claims);
  ASSERT_TRUE(after.ok()) << after.error().message;
  EXPECT_EQ(after->kvs_size(), 1);
  EXPECT_GT(client->counters().sign_ins.load(), signed_in) << "the expired token was not replaced";
  EXPECT_TRUE(coordinator->may_issue());
  EXPECT_EQ(coordinator->stats().fencing_events, 0u);

  EtcdOptions wrong = options;
  wrong.password = "guess";
  auto refused = (*make_etcd_coordinator(wrong))->claim();
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message.find("authentication failed"), std::string::npos)
      << refused.error().message;
  EtcdOptions anonymous = options;
  anonymous.user.clear();
  anonymous.password.clear();
  EXPECT_FALSE((*make_etcd_coordinator(anonymous))->claim().ok());
  EXPECT_TRUE(coordinator->release(std::nullopt).ok());
}

}  // namespace
}  // namespace snowid
