// The coordinators' pure parts, without etcd: pod names, the static
// coordinator, claim records, keys, the peer clock rule and option checks.
#include <gtest/gtest.h>

#include "coordinator_options.h"
#include "etcd_claim.h"
#include "etcd_coordinator.h"
#include "etcd_server_time.h"
#include "snowid/coordinator.h"

namespace snowid {
namespace {

using std::chrono::milliseconds;

TEST(PodName, OrdinalSuffixIsThePreferredId) {
  EXPECT_EQ(*node_id_from_pod_name("snowid-3", 1024), 3u);
  EXPECT_EQ(*node_id_from_pod_name("id-service-prod-0", 1024), 0u);
  EXPECT_EQ(*node_id_from_pod_name("snowid-1023", 1024), 1023u);
}

TEST(PodName, RefusesNamesWithoutAnOrdinalOrBeyondTheRange) {
  for (const char* bad : {"snowid", "snowid-", "snowid-x3", "snowid-3a", "", "snowid-+1"}) {
    auto id = node_id_from_pod_name(bad, 1024);
    ASSERT_FALSE(id.ok()) << bad;
    EXPECT_EQ(id.error().code, ErrorCode::kInvalidArgument);
  }
  auto beyond = node_id_from_pod_name("snowid-4", 4);
  ASSERT_FALSE(beyond.ok());
  EXPECT_NE(beyond.error().message.find("beyond the layout's 4 node ids"), std::string::npos);
}

TEST(StaticCoordinator, AlwaysIssuesTheConfiguredNodeWithoutCeiling) {
  auto coordinator = make_static_coordinator(Layout{}, 3, 7);
  ASSERT_TRUE(coordinator.ok());
  auto claim = (*coordinator)->claim();
  ASSERT_TRUE(claim.ok());
  EXPECT_EQ(claim->datacenter_id, 3u);
  EXPECT_EQ(claim->worker_id, 7u);
  EXPECT_EQ(claim->node_id, (3u << 5) | 7u);
  EXPECT_EQ(claim->floor, milliseconds{0});
  EXPECT_FALSE(claim->ceiling.has_value());
  EXPECT_TRUE((*coordinator)->may_issue());
  EXPECT_EQ((*coordinator)->stats().state, ClaimState::kHeld);
  EXPECT_TRUE((*coordinator)->release(std::nullopt).ok());
  EXPECT_FALSE(make_static_coordinator(Layout{}, 32, 0).ok());
}

TEST(NodeIds, CountFollowsTheNodeBits) {
  Layout layout;
  EXPECT_EQ(node_id_count(layout), 1024u);
  layout.datacenter_bits = 0;
  layout.worker_bits = 2;
  EXPECT_EQ(node_id_count(layout), 4u);
}

TEST(RenewalLatency, BucketsRiseByAFifthAndHoldEveryLatency) {
  using std::chrono::microseconds;
  EXPECT_EQ(renewal_latency_bound(0), microseconds{100});
  EXPECT_EQ(renewal_latency_bound(4), microseconds{200});
  EXPECT_EQ(renewal_latency_bound(kRenewalLatencyBuckets - 1), microseconds::max());
  for (std::size_t i = 1; i + 1 < kRenewalLatencyBuckets; ++i) {
    EXPECT_GT(renewal_latency_bound(i), renewal_latency_bound(i - 1));
    EXPECT_LE(renewal_latency_bound(i).count(), renewal_latency_bound(i - 1).count() * 6 / 5 + 1);
  }
  EXPECT_EQ(renewal_latency_bucket(microseconds{0}), 0u);
  EXPECT_EQ(renewal_latency_bucket(microseconds{100}), 0u);
  EXPECT_EQ(renewal_latency_bucket(microseconds{101}), 1u);
  EXPECT_EQ(renewal_latency_bucket(microseconds{200}), 4u);
  EXPECT_EQ(renewal_latency_bucket(std::chrono::hours{1}), kRenewalLatencyBuckets - 1);
}

// A store request may take at most the renewal period (a third of the
// lease): longer, and one member that stopped answering costs the claim.
TEST(LeaseTiming, ARequestTimeoutBeyondTheRenewalPeriodIsWarnedOf) {
  CoordinatorOptions options;  // 10 s lease, 2,000 ms requests
  EXPECT_EQ(lease_timing_warning(options), std::nullopt);
  options.lease_ttl = std::chrono::seconds{3};
  options.store_request_timeout = std::chrono::milliseconds{1000};
  EXPECT_EQ(lease_timing_warning(options), std::nullopt);
  options.store_request_timeout = std::chrono::milliseconds{1001};
  ASSERT_TRUE(lease_timing_warning(options).has_value());
  options.lease_ttl = std::chrono::seconds{2};
  options.store_request_timeout = std::chrono::milliseconds{2000};
  const std::optional<std::string> warning = lease_timing_warning(options);
  ASSERT_TRUE(warning.has_value());
  EXPECT_NE(warning->find("store_request_timeout_ms 2000 is more than a third of lease_ttl_s 2"),
            std::string::npos)
      << *warning;
  EXPECT_NE(warning->find("set store_request_timeout_ms to at most 666"), std::string::npos)
      << *warning;
}

TEST(ClaimRecord, RoundTripsThroughJson) {
  coord::ClaimRecord record;
  record.host = "node-a";
  record.pid = 42;
  record.instance = "00ff";
  record.addresses = {"10.0.0.1:8080", "10.0.0.1:9090"};
  record.started = milliseconds{1'700'000'000'000};
  record.wall_time = milliseconds{1'700'000'001'000};
  record.datacenter_id = 1;
  record.worker_id = 2;
  auto parsed = coord::ClaimRecord::parse(record.to_json());
  ASSERT_TRUE(parsed.ok());
  EXPECT_EQ(parsed->host, "node-a");
  EXPECT_EQ(parsed->pid, 42);
  EXPECT_EQ(parsed->addresses, record.addresses);
  EXPECT_EQ(parsed->wall_time, record.wall_time);
  EXPECT_EQ(parsed->worker_id, 2u);
  EXPECT_FALSE(coord::ClaimRecord::parse("not json").ok());
  EXPECT_FALSE(coord::ClaimRecord::parse("{\"pid\":\"x\"}").ok());
}

TEST(Keys, PrefixesAndIds) {
  EXPECT_EQ(coord::claim_key("prod", 7), "/snowid/prod/claims/7");
  EXPECT_EQ(coord::reservation_key("prod", 7), "/snowid/prod/reservations/7");
  EXPECT_EQ(coord::prefix_end("/snowid/prod/claims/"), "/snowid/prod/claims0");
  EXPECT_EQ(coord::node_id_of_key("/snowid/prod/claims/12"), 12u);
  EXPECT_FALSE(coord::node_id_of_key("/snowid/prod/claims/x").has_value());
}

TEST(PeerClocks, RefusesBeyondTheThresholdSayingByHowMuch) {
  const milliseconds now{1'700'000'000'000};
  using coord::PeerClock;
  EXPECT_TRUE(coord::check_peer_clocks({}, now, milliseconds{10'000}).ok());
  EXPECT_TRUE(coord::check_peer_clocks({PeerClock{now - milliseconds{9'000}, milliseconds{0}},
                                        PeerClock{now + milliseconds{5'000}, milliseconds{0}}},
                                       now, milliseconds{10'000})
                  .ok());
  Status behind = coord::check_peer_clocks({PeerClock{now + milliseconds{12'000}, milliseconds{0}},
                                            PeerClock{now + milliseconds{13'000}, milliseconds{0}}},
                                           now, milliseconds{10'000});
  ASSERT_FALSE(behind.ok());
  EXPECT_NE(behind.error().message.find("12.5 s behind the mean of the 2 live peers"),
            std::string::npos)
      << behind.error().message;
  EXPECT_TRUE(coord::check_peer_clocks({PeerClock{now + milliseconds{60'000}, milliseconds{0}}},
                                       now, milliseconds{0})
                  .ok());
}

// A peer's published reading is up to its refresh interval old: a healthy
// node 9 s ahead of a peer whose sample is 2 s old must not be taken for 11 s
// off, and a refusal says how old the samples were (issue "Hardening", 14).
TEST(PeerClocks, CorrectForTheAgeOfEachSample) {
  using coord::PeerClock;
  const milliseconds now{1'790'000'000'000};
  const milliseconds refresh{2'200};
  // The peer wrote its clock 2 s ago, when our clock was 9 s ahead of it.
  EXPECT_TRUE(coord::check_peer_clocks({PeerClock{now - milliseconds{11'000}, refresh}}, now,
                                       milliseconds{10'000})
                  .ok());
  Status far = coord::check_peer_clocks({PeerClock{now - milliseconds{22'000}, refresh}}, now,
                                        milliseconds{10'000});
  ASSERT_FALSE(far.ok());
  EXPECT_NE(far.error().message.find("19.8 s ahead of"), std::string::npos) << far.error().message;
  EXPECT_NE(far.error().message.find("up to 2.2 s old"), std::string::npos) << far.error().message;
}

// A sample its holder stopped refreshing (it lost its store, or its store
// lost its quorum) is dropped by the store's clock, not read as this node's
// clock running ahead by its age (issue "Faults the way production has
// them": recovery after a quorum loss waited for such records to go).
TEST(PeerClocks, SamplesNoLongerRefreshedByTheStoresClockAreDropped) {
  using coord::PeerClock;
  const milliseconds now{1'790'000'000'000};
  const milliseconds refresh{2'000};
  const milliseconds offset{1'000};
  const std::vector<PeerClock> peers{PeerClock{now - milliseconds{15'000}, refresh},
                                     PeerClock{now - milliseconds{1'500}, refresh}};
  // Kept as they are, the stale sample makes this node look 7 s ahead.
  EXPECT_FALSE(coord::check_peer_clocks(peers, now, offset).ok());
  const auto live = coord::live_peer_clocks(peers, now, offset);
  ASSERT_EQ(live.size(), 1u);
  EXPECT_EQ(live.front().wall_time, now - milliseconds{1'500});
  EXPECT_TRUE(coord::check_peer_clocks(live, now, offset).ok());
  // Exactly max_age + max_offset old by the store's clock: still live.
  EXPECT_EQ(coord::live_peer_clocks({PeerClock{now - milliseconds{3'000}, refresh}}, now, offset)
                .size(),
            1u);
  // Without the store's clock every sample counts: the check stays as strict.
  EXPECT_EQ(coord::live_peer_clocks(peers, std::nullopt, offset).size(), 2u);
  // A node whose own clock runs 20 s ahead still meets the refusal: by the
  // store's clock the peer's sample is fresh.
  const milliseconds ahead = now + milliseconds{20'000};
  const auto fresh = coord::live_peer_clocks({PeerClock{now - milliseconds{500}, refresh}}, now,
                                             offset);
  ASSERT_EQ(fresh.size(), 1u);
  EXPECT_FALSE(coord::check_peer_clocks(fresh, ahead, offset).ok());
}

TEST(EtcdOptions, BadEndpointsAndOptionsAreInvalidArguments) {
  EXPECT_EQ(parse_etcd_endpoints("a:1,http://b:2379")->size(), 2u);
  for (const char* bad : {"", "host", "host:", ":2379", "host:0", "host:70000", "a:1,,b:2"}) {
    auto parsed = parse_etcd_endpoints(bad);
    ASSERT_FALSE(parsed.ok()) << bad;
    EXPECT_EQ(parsed.error().code, ErrorCode::kInvalidArgument);
  }
  EtcdOptions options;
  options.endpoints = {"127.0.0.1:2379"};
  options.cluster = "bad name";
  EXPECT_FALSE(make_etcd_coordinator(options).ok());
  options.cluster = "ok";
  options.preferred_node_id = 1024;
  EXPECT_FALSE(make_etcd_coordinator(options).ok());
  options.preferred_node_id.reset();
  options.reserve_min_left = options.reserve_ahead;
  EXPECT_FALSE(make_etcd_coordinator(options).ok());
  options.reserve_min_left = milliseconds{1000};
  options.tls_ca_file = "/nonexistent/ca.pem";
  EXPECT_FALSE(make_etcd_coordinator(options).ok());
}

TEST(HttpDate, ReadsAnImfFixdate) {
  using std::chrono::seconds;
  using std::chrono::sys_seconds;
  EXPECT_EQ(coord::parse_http_date("Sun, 06 Nov 1994 08:49:37 GMT"),
            sys_seconds{seconds{784111777}});
  EXPECT_EQ(coord::parse_http_date("Thu, 01 Jan 1970 00:00:00 GMT"), sys_seconds{seconds{0}});
  EXPECT_EQ(coord::parse_http_date("Fri, 27 Nov 2026 12:42:56 GMT"),
            sys_seconds{seconds{1795783376}});
}

TEST(HttpDate, RefusesEverythingElse) {
  for (const char* bad : {"", "Sun, 06 Nov 1994 08:49:37", "Sun, 06 Nov 1994 08:49:37 UTC",
                          "Sun, 06 Nov 1994 08:49:37 GMT ", "Sunday, 06-Nov-94 08:49:37 GMT",
                          "Sun Nov  6 08:49:37 1994", "Sun, 06 Foo 1994 08:49:37 GMT",
                          "Sun, 06 Nov 1994 25:49:37 GMT", "Sun, 32 Nov 1994 08:49:37 GMT",
                          "Sun, 06 Nov 1994 08:49:3x GMT", "xxxxxxxxxxxxxxxxxxxxxxxxxxxxx"}) {
    EXPECT_FALSE(coord::parse_http_date(bad).has_value()) << bad;
  }
}

// THE TAKEOVER RULE's pieces (leased_claim.h), without a store.
LeaseOptions takeover_options() {
  LeaseOptions options;
  options.cluster = "c";
  options.lease_ttl = std::chrono::seconds{10};
  options.reserve_ahead = milliseconds{3000};
  options.max_peer_clock_offset = milliseconds{10'000};
  return options;
}

TEST(TakeoverRule, TheFloorIsTheLaterClockPlusTheLeaseAndTheReservation) {
  const LeaseOptions options = takeover_options();
  const milliseconds store{1'800'000'000'000};
  EXPECT_EQ(coord::takeover_floor(options, store, store - milliseconds{2000}),
            store + milliseconds{13'000});
  EXPECT_EQ(coord::takeover_floor(options, store, store + milliseconds{2000}),
            store + milliseconds{15'000});
}

TEST(TakeoverRule, AClockAheadOfTheStoreBeyondTheReservationOrBehindBeyondTheOffsetIsRefused) {
  LeaseOptions options = takeover_options();
  const milliseconds store{1'800'000'000'000};
  const coord::StoreTime read{store, milliseconds{1}};
  EXPECT_TRUE(coord::check_store_clock(options, "Redis", read, store + milliseconds{2900}).ok());
  Status ahead = coord::check_store_clock(options, "Redis", read, store + milliseconds{3500});
  ASSERT_FALSE(ahead.ok());
  EXPECT_NE(ahead.error().message.find("ahead of Redis's clock"), std::string::npos)
      << ahead.error().message;
  EXPECT_TRUE(coord::check_store_clock(options, "Redis", read, store - milliseconds{9000}).ok());
  Status behind = coord::check_store_clock(options, "Redis", read, store - milliseconds{11'000});
  ASSERT_FALSE(behind.ok());
  EXPECT_NE(behind.error().message.find("behind Redis's clock"), std::string::npos);
  // A smaller offset bounds both ways; 0 leaves the lead bounded all the same.
  options.max_peer_clock_offset = milliseconds{1000};
  EXPECT_FALSE(coord::check_store_clock(options, "Redis", read, store + milliseconds{1500}).ok());
  options.max_peer_clock_offset = milliseconds{0};
  EXPECT_TRUE(coord::check_store_clock(options, "Redis", read, store - milliseconds{60'000}).ok());
  EXPECT_FALSE(coord::check_store_clock(options, "Redis", read, store + milliseconds{3500}).ok());
  // etcd's Date is cut to the second: a reading vouches for [at, at + 1 s].
  const coord::StoreTime date{store, milliseconds{1000}};
  EXPECT_TRUE(coord::check_store_clock(takeover_options(), "etcd", date,
                                       store + milliseconds{3900})
                  .ok());
}

TEST(TakeoverRule, AnotherClusterWithTheSameLayoutIsRefusedUnlessShared) {
  LeaseOptions options = takeover_options();
  options.layout = *preset("twitter");
  const std::string same = describe(options.layout);
  Layout other_epoch = options.layout;
  other_epoch.epoch += milliseconds{1};
  EXPECT_TRUE(coord::check_distinct_id_space(options, "PostgreSQL", {{"c", same}}).ok());
  EXPECT_TRUE(
      coord::check_distinct_id_space(options, "PostgreSQL", {{"d", describe(other_epoch)}}).ok());
  Status refused = coord::check_distinct_id_space(options, "PostgreSQL", {{"c", same}, {"d", same}});
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().code, ErrorCode::kInvalidArgument);
  EXPECT_NE(refused.error().message.find("cluster 'd'"), std::string::npos);
  options.share_id_space = true;
  EXPECT_TRUE(coord::check_distinct_id_space(options, "PostgreSQL", {{"d", same}}).ok());
}

}  // namespace
}  // namespace snowid
