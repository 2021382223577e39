// What every leasing store (etcd, Redis, ZooKeeper) must do, written once:
// each store's test program runs these bodies against its real server. A
// body fails the calling test through GoogleTest assertions.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "lease_options.h"
#include "leased_claim.h"
#include "snowid/clock.h"
#include "snowid/coordinator.h"

namespace snowid::test {

// Four node ids (2 worker bits), so "all taken" is cheap to reach.
Layout small_layout();

inline std::chrono::milliseconds wall_now() { return SystemClock::instance().now_fresh(); }

// Polls `condition` every 20 ms for at most `limit`; its last answer.
template <typename Condition>
bool eventually(Condition condition, std::chrono::milliseconds limit) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < deadline) {
    if (condition()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds{20});
  }
  return condition();
}

// One store as the bodies below see it: a cluster of its own per test, on
// small_layout(), advertising 127.0.0.1:8080.
struct LeasedStoreUnderTest {
  std::string name;      // as CoordinatorStats names it: "redis"
  std::string cli_flag;  // `snowid cluster`'s flag: "--redis"
  std::string endpoint;  // HOST:PORT for that flag
  std::string cluster;
  // A coordinator preferring `preferred` (requiring it if `require`).
  std::function<std::unique_ptr<Coordinator>(std::optional<std::uint64_t> preferred, bool require)>
      make;
  // The reservation the store holds for a node id (0 if none), and whether
  // a claim for it exists.
  std::function<std::chrono::milliseconds(std::uint64_t)> stored_reservation;
  std::function<bool(std::uint64_t)> claim_exists;
  // `snowid cluster list` of the cluster, through the library.
  std::function<Result<std::vector<ClusterNode>>()> list;
  // A coordinator preferring id 1 that talks to `endpoints` instead.
  std::function<std::unique_ptr<Coordinator>(std::vector<std::string> endpoints)> make_at;
  // What claim() says when no endpoint answers.
  std::string unreachable_message;
  // Another store's `snowid cluster` flag, which may not be given with this one's.
  std::string other_cli_flag;
  std::chrono::milliseconds lease_ttl{0};  // of the coordinators `make` gives
  // Set by each store's fixture after describe_store(): writes the
  // cluster's created marker as an operator who knows the cluster is new to
  // the store would ("0"), so that its first claims start at the clock;
  std::function<void()> mark_new_cluster;
  // and deletes everything of the cluster in the store, as a wiped data
  // directory, a flush or `del --prefix` would, while holders may be alive;
  std::function<void()> lose_data;
  // and takes a real backup of the store as an operator would (pg_dump,
  // mariadb-dump, `etcdctl snapshot save`, a copy of Redis's append-only
  // files or of ZooKeeper's data directory); the function it returns
  // restores it as an operator would, in place of what the store holds
  // then, while holders may be alive (a restore that restarts the server
  // cuts their connections; the whole store goes back, other clusters too).
  std::function<std::function<void()>()> back_up;
  // A claim of the store preferring `preferred`, without a coordinator's
  // background thread: it renews when told (its steps are the test's).
  std::function<std::unique_ptr<coord::LeasedClaim>(std::uint64_t preferred)> make_claim;
};

// A store whose coordinators come from `make_coordinator` with the options
// `options(preferred)` gives: the cluster, make, make_at and list follow.
template <typename Options>
LeasedStoreUnderTest describe_store(
    std::string name, std::string cli_flag, std::string endpoint,
    std::function<Options(std::optional<std::uint64_t>)> options,
    Result<std::unique_ptr<Coordinator>> (*make_coordinator)(const Options&),
    std::function<std::chrono::milliseconds(std::uint64_t)> stored_reservation,
    std::function<bool(std::uint64_t)> claim_exists, std::string unreachable_message,
    std::string other_cli_flag) {
  const auto made = [make_coordinator](const Options& o) {
    auto coordinator = make_coordinator(o);
    if (!coordinator.ok()) ADD_FAILURE() << coordinator.error().message;
    return coordinator.ok() ? std::move(*coordinator) : nullptr;
  };
  return {std::move(name),
          std::move(cli_flag),
          std::move(endpoint),
          options(std::nullopt).cluster,
          [options, made](std::optional<std::uint64_t> preferred, bool require) {
            Options o = options(preferred);
            o.require_preferred_node_id = require;
            return made(o);
          },
          std::move(stored_reservation),
          std::move(claim_exists),
          [options] { return list_cluster(options(std::nullopt)); },
          [options, made](std::vector<std::string> endpoints) {
            Options o = options(1);
            o.endpoints = std::move(endpoints);
            return made(o);
          },
          std::move(unreachable_message),
          std::move(other_cli_flag),
          options(std::nullopt).lease_ttl,
          {},
          {},
          {},
          {}};
}

// The first claim in a cluster new to the store, preferring id 2: the id,
// a floor `ahead` (lease_ttl + reserve_ahead) above the clock, the stored
// reservation, and the stats. The coordinator, for the store's own checks.
// `store_clock_grain`: how far above the real time the store's clock reading
// may lie (its resolution: 1 ms; etcd's Date has whole seconds, and Date + 1 s
// is taken).
std::unique_ptr<Coordinator> claims_the_preferred_id_of_a_new_cluster(
    const LeasedStoreUnderTest& store, std::chrono::milliseconds ahead,
    std::chrono::milliseconds store_clock_grain = std::chrono::milliseconds{1});
// Preferred id 1 taken: the next claimers get 0, then 2.
void takes_the_lowest_free_id_when_the_preferred_is_taken(const LeasedStoreUnderTest& store);
// Four holders, then a fifth claimer: kUnavailable naming the cluster.
void all_ids_taken_is_a_clear_error(const LeasedStoreUnderTest& store);
// A required id held elsewhere: kAlreadyExists naming the holder's address.
void a_required_id_held_elsewhere_names_the_holder(const LeasedStoreUnderTest& store);
// Held well past the lease TTL by renewals alone, without a fence.
void a_renewed_claim_outlives_its_ttl(const LeasedStoreUnderTest& store,
                                      std::chrono::milliseconds hold_for);
// release() deletes the claim and keeps the reservation; the next holder
// starts at it, and a release with the last issued unit lowers it to that.
void graceful_release_keeps_the_reservation(const LeasedStoreUnderTest& store);
// list_cluster() rows: a claimed id and a released one with its reservation.
void lists_the_cluster_for_operators(const LeasedStoreUnderTest& store);
// `snowid cluster list|release` with the store's flag: rows, a refused
// release, a forced one the holder notices; bad flags exit 2 in one line
// (with another store's flag too), an unreachable store exits 1.
void cluster_list_and_release_from_the_cli(const LeasedStoreUnderTest& store);
// A closed port first in the endpoint list: the claim goes to the store.
void fails_over_to_the_next_endpoint(const LeasedStoreUnderTest& store);
// Only a closed port: kUnavailable with the store's message, no issuing.
void an_unreachable_store_is_a_clear_error(const LeasedStoreUnderTest& store);
// One round's claimers: each claims (preferring id 3) when called, on a
// cluster of the round's own.
using Racers = std::vector<std::function<Result<Claim>()>>;
// `rounds` rounds of four claimers started together: four distinct ids.
void racing_claimers_get_distinct_ids(int rounds, const std::function<Racers(int round)>& racers);
// `old_holder` holds id 1 of the store's cluster; `end_claim` then ends its
// claim as an expiry would, keeping its reservation. A successor starts at
// that reservation and issues above it; the old holder learns it lost, and
// can neither raise nor lower the successor's reservation nor delete its claim.
void a_take_over_starts_above_the_old_reservation(const LeasedStoreUnderTest& store,
                                                  coord::LeasedClaim& old_holder,
                                                  const std::function<void()>& end_claim);
// A holder of id 1 serves in a long-running cluster; the store loses
// everything of the cluster; a second claimer for id 1 starts above every
// ID the holder could issue (its reservation, which it can no longer raise),
// reports a store it had to mark as new, and the holder stops issuing
// within the lease, saying why.
void emptied_store_starts_the_next_claimer_above(const LeasedStoreUnderTest& store);
// A node id used and released; a backup (no live claim in it); a holder
// takes the id and raises its reservation; the backup is restored (the id
// free again, its reservation the old one) and a second claimer takes the
// id at once. THE TAKEOVER RULE: it starts above every reservation the
// hidden holder wrote. The holder never renews nor raises its reservation
// again (each renewal finds its claim gone, or fails where the restored
// store does not take it back) and stops within its lease.
void a_record_restored_under_a_live_holder_is_never_trusted(const LeasedStoreUnderTest& store);
// A generator started as a take-over's claim says issues above `old_reservation`.
// (`coordinator` made it; its reservation, once raised past the floor, is the ceiling.)
void a_take_over_issues_above(const Claim& claim, Coordinator& coordinator,
                              std::chrono::milliseconds old_reservation);

}  // namespace snowid::test

// The tests above that need nothing more of a store, as tests of `Fixture`
// (which has `test::LeasedStoreUnderTest store()`).
#define SNOWID_LEASED_STORE_TESTS(Fixture)                                         \
  TEST_F(Fixture, TakesTheLowestFreeIdWhenThePreferredIsTaken) {                   \
    ::snowid::test::takes_the_lowest_free_id_when_the_preferred_is_taken(store()); \
  }                                                                                \
  TEST_F(Fixture, AllIdsTakenIsAClearError) {                                      \
    ::snowid::test::all_ids_taken_is_a_clear_error(store());                       \
  }                                                                                \
  TEST_F(Fixture, RequiredIdHeldElsewhereNamesTheHolder) {                         \
    ::snowid::test::a_required_id_held_elsewhere_names_the_holder(store());        \
  }                                                                                \
  TEST_F(Fixture, GracefulReleaseKeepsTheReservation) {                            \
    ::snowid::test::graceful_release_keeps_the_reservation(store());               \
  }                                                                                \
  TEST_F(Fixture, ListsTheClusterForOperators) {                                   \
    ::snowid::test::lists_the_cluster_for_operators(store());                      \
  }                                                                                \
  TEST_F(Fixture, FailsOverToTheNextEndpoint) {                                    \
    ::snowid::test::fails_over_to_the_next_endpoint(store());                      \
  }                                                                                \
  TEST_F(Fixture, AnUnreachableStoreIsAClearError) {                               \
    ::snowid::test::an_unreachable_store_is_a_clear_error(store());                \
  }                                                                                \
  TEST_F(Fixture, ClusterListAndReleaseFromTheCli) {                               \
    ::snowid::test::cluster_list_and_release_from_the_cli(store());                \
  }                                                                                \
  TEST_F(Fixture, ARecordRestoredUnderALiveHolderIsNeverTrusted) {                \
    test::a_record_restored_under_a_live_holder_is_never_trusted(store());         \
  }                                                                                \
  TEST_F(Fixture, AStoreEmptiedUnderAHolderStartsTheNextClaimerAboveIt) {          \
    ::snowid::test::emptied_store_starts_the_next_claimer_above(store());          \
  }
