#include "leased_store_contract.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <set>

#include "snowid/decode.h"
#include "snowid/generator.h"
#include "subprocess.h"

namespace snowid::test {

using std::chrono::milliseconds;
using std::chrono::seconds;

Layout small_layout() {
  Layout layout;
  layout.datacenter_bits = 0;
  layout.worker_bits = 2;
  return layout;
}

std::unique_ptr<Coordinator> claims_the_preferred_id_of_a_new_cluster(
    const LeasedStoreUnderTest& store, milliseconds ahead, milliseconds store_clock_grain) {
  const milliseconds before = wall_now();
  auto coordinator = store.make(2, false);
  auto claim = coordinator->claim();
  EXPECT_TRUE(claim.ok()) << claim.error().message;
  if (!claim.ok()) return coordinator;
  EXPECT_EQ(claim->node_id, 2u);
  EXPECT_EQ(claim->worker_id, 2u);
  // A cluster new to the store cannot tell "never used" from "lost with the
  // store's data": it starts lease_ttl + reserve_ahead above the first claim.
  EXPECT_GE(claim->floor, before + ahead);
  EXPECT_LE(claim->floor, wall_now() + ahead + store_clock_grain);
  EXPECT_TRUE(claim->ceiling.has_value());
  // The first reservation is the floor (less the store clock's grain); it is
  // raised as the clock nears it.
  EXPECT_GE(claim->ceiling.value_or(milliseconds{0}) + store_clock_grain + milliseconds{100},
            claim->floor);  // (and this node's clock a little ahead of the store's)
  EXPECT_EQ(store.stored_reservation(2), claim->ceiling.value_or(milliseconds{0}));
  EXPECT_TRUE(coordinator->may_issue());
  const CoordinatorStats stats = coordinator->stats();
  EXPECT_EQ(stats.store, store.name);
  EXPECT_EQ(stats.state, ClaimState::kHeld);
  EXPECT_EQ(stats.node_id, 2u);
  EXPECT_TRUE(stats.lease_time_left.has_value());
  EXPECT_GT(stats.store_requests, 0u);
  return coordinator;
}

void takes_the_lowest_free_id_when_the_preferred_is_taken(const LeasedStoreUnderTest& store) {
  auto first = store.make(1, false), second = store.make(1, false), third = store.make(1, false);
  EXPECT_EQ(first->claim()->node_id, 1u);
  EXPECT_EQ(second->claim()->node_id, 0u);
  EXPECT_EQ(third->claim()->node_id, 2u);
}

void all_ids_taken_is_a_clear_error(const LeasedStoreUnderTest& store) {
  std::vector<std::unique_ptr<Coordinator>> holders;
  for (int i = 0; i < 4; ++i) {
    holders.push_back(store.make(std::nullopt, false));
    ASSERT_TRUE(holders.back()->claim().ok());
  }
  auto late = store.make(std::nullopt, false);
  auto refused = late->claim();
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().code, ErrorCode::kUnavailable);
  EXPECT_NE(refused.error().message.find("all 4 node ids of cluster"), std::string::npos)
      << refused.error().message;
  EXPECT_FALSE(late->may_issue());
}

void a_required_id_held_elsewhere_names_the_holder(const LeasedStoreUnderTest& store) {
  auto holder = store.make(3, false);
  ASSERT_TRUE(holder->claim().ok());
  auto refused = store.make(3, true)->claim();
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().code, ErrorCode::kAlreadyExists);
  EXPECT_NE(refused.error().message.find("node id 3 of cluster"), std::string::npos);
  EXPECT_NE(refused.error().message.find("serving 127.0.0.1:8080"), std::string::npos)
      << refused.error().message;
}

void a_renewed_claim_outlives_its_ttl(const LeasedStoreUnderTest& store, milliseconds hold_for) {
  auto coordinator = store.make(0, false);
  ASSERT_TRUE(coordinator->claim().ok());
  std::this_thread::sleep_for(hold_for);
  EXPECT_TRUE(coordinator->may_issue());
  EXPECT_TRUE(store.claim_exists(0));
  const CoordinatorStats stats = coordinator->stats();
  EXPECT_EQ(stats.claims, 1u);
  EXPECT_EQ(stats.fencing_events, 0u);
  // Every renewal is counted, each in one latency bucket.
  EXPECT_GE(stats.renewals, 1u);
  std::uint64_t bucketed = 0;
  for (std::uint64_t n : stats.renewal_latency) bucketed += n;
  EXPECT_EQ(bucketed, stats.renewals);
}

void graceful_release_keeps_the_reservation(const LeasedStoreUnderTest& store) {
  auto coordinator = store.make(3, false);
  auto claim = coordinator->claim();
  ASSERT_TRUE(claim.ok());
  const milliseconds reservation = coordinator->reservation();
  ASSERT_TRUE(coordinator->release(std::nullopt).ok());
  EXPECT_FALSE(coordinator->may_issue());
  EXPECT_FALSE(store.claim_exists(3));
  EXPECT_EQ(store.stored_reservation(3), reservation);

  // The next holder starts above it; releasing with the last issued unit
  // lowers the reservation to that unit, never below the floor.
  auto next = store.make(3, false);
  auto taken = next->claim();
  ASSERT_TRUE(taken.ok());
  EXPECT_EQ(taken->node_id, 3u);
  EXPECT_EQ(taken->store_reservation, reservation);
  // THE TAKEOVER RULE: above it, and above the take-over's moment + lease_ttl.
  EXPECT_GE(taken->floor, reservation);
  EXPECT_GE(taken->floor, wall_now() - milliseconds{1000} + store.lease_ttl);
  // Its first reservation is its floor, raised as the clock nears it.
  ASSERT_TRUE(eventually([&] { return next->reservation() > taken->floor + milliseconds{10}; },
                         milliseconds{20'000}));
  ASSERT_TRUE(next->release(taken->floor + milliseconds{10}).ok());
  EXPECT_EQ(store.stored_reservation(3), taken->floor + milliseconds{10});
}

void lists_the_cluster_for_operators(const LeasedStoreUnderTest& store) {
  auto a = store.make(0, false), b = store.make(2, false);
  ASSERT_TRUE(a->claim().ok());
  ASSERT_TRUE(b->claim().ok());
  ASSERT_TRUE(b->release(std::nullopt).ok());
  auto rows = store.list();
  ASSERT_TRUE(rows.ok()) << rows.error().message;
  ASSERT_EQ(rows->size(), 2u);
  EXPECT_EQ((*rows)[0].node_id, 0u);
  EXPECT_TRUE((*rows)[0].claimed);
  EXPECT_EQ((*rows)[0].addresses, "127.0.0.1:8080");
  EXPECT_GT((*rows)[0].reservation, wall_now());
  EXPECT_EQ((*rows)[1].node_id, 2u);
  EXPECT_FALSE((*rows)[1].claimed);
  EXPECT_GT((*rows)[1].reservation.count(), 0);
}

void cluster_list_and_release_from_the_cli(const LeasedStoreUnderTest& store) {
  auto coordinator = store.make(2, false);
  ASSERT_TRUE(coordinator->claim().ok());
  const auto run = [](std::vector<std::string> args) {
    args.insert(args.begin(), SNOWID_CLI_PATH);
    return run_process(args, {}, seconds{20});
  };
  const std::string flag = store.cli_flag, endpoint = store.endpoint, cluster = store.cluster;
  auto listed = run({"cluster", "list", flag, endpoint, "--cluster", cluster});
  ASSERT_EQ(listed.exit_code, 0) << listed.err;
  const auto lines = split_lines(listed.out);
  ASSERT_EQ(lines.size(), 2u) << listed.out;
  EXPECT_EQ(lines[1].rfind("2 ", 0), 0u) << lines[1];
  EXPECT_NE(lines[1].find("pid=" + std::to_string(::getpid())), std::string::npos) << lines[1];
  EXPECT_NE(lines[1].find("127.0.0.1:8080"), std::string::npos) << lines[1];

  auto refused = run({"cluster", "release", "2", flag, endpoint, "--cluster", cluster});
  EXPECT_EQ(refused.exit_code, 1);
  EXPECT_NE(refused.err.find("--force"), std::string::npos) << refused.err;
  EXPECT_TRUE(store.claim_exists(2));

  auto forced = run({"cluster", "release", "2", "--force", flag, endpoint, "--cluster", cluster});
  EXPECT_EQ(forced.exit_code, 0) << forced.err;
  // The holder notices and stops issuing (then claims again).
  EXPECT_TRUE(
      eventually([&] { return coordinator->stats().lost_claims == 1; }, milliseconds{3000}));

  std::vector<std::vector<std::string>> bad;
  bad.push_back(
      {"cluster", "list", flag, endpoint, store.other_cli_flag, endpoint, "--cluster", cluster});
  bad.push_back({"cluster", "release", "two", flag, endpoint, "--cluster", cluster});
  bad.push_back({"cluster", "list", flag, "no-port", "--cluster", cluster});
  bad.push_back({"cluster", "list", "--cluster", cluster});
  bad.push_back({"cluster", "list", flag, endpoint});
  bad.push_back({"cluster", "list", flag, endpoint, "--cluster", "bad name"});
  for (const auto& arguments : bad) {
    auto result = run(arguments);
    EXPECT_EQ(result.exit_code, 2) << arguments[1] << " " << result.err;
    EXPECT_EQ(split_lines(result.err).size(), 1u) << result.err;
  }
  auto unreachable =
      run({"cluster", "list", flag, "127.0.0.1:1", "--cluster", cluster, "--timeout-ms", "300"});
  EXPECT_EQ(unreachable.exit_code, 1) << unreachable.err;
}

void fails_over_to_the_next_endpoint(const LeasedStoreUnderTest& store) {
  const int closed = free_loopback_ports(1)[0];
  auto claim = store.make_at({"127.0.0.1:" + std::to_string(closed), store.endpoint})->claim();
  ASSERT_TRUE(claim.ok()) << claim.error().message;
  EXPECT_EQ(claim->node_id, 1u);
}

void an_unreachable_store_is_a_clear_error(const LeasedStoreUnderTest& store) {
  auto coordinator = store.make_at({"127.0.0.1:" + std::to_string(free_loopback_ports(1)[0])});
  auto refused = coordinator->claim();
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().code, ErrorCode::kUnavailable);
  EXPECT_NE(refused.error().message.find(store.unreachable_message), std::string::npos)
      << refused.error().message;
  EXPECT_FALSE(coordinator->may_issue());
}

void racing_claimers_get_distinct_ids(int rounds, const std::function<Racers(int round)>& racers) {
  for (int round = 0; round < rounds; ++round) {
    const Racers claimers = racers(round);
    std::vector<Result<Claim>> results(claimers.size(), invalid_argument("not run"));
    std::atomic<std::size_t> ready{0};
    std::vector<std::thread> threads;
    for (std::size_t i = 0; i < claimers.size(); ++i) {
      threads.emplace_back([&, i] {
        ready.fetch_add(1);
        while (ready.load() < claimers.size()) {
        }
        results[i] = claimers[i]();
      });
    }
    for (auto& t : threads) t.join();
    std::set<std::uint64_t> ids;
    for (const auto& r : results) {
      ASSERT_TRUE(r.ok()) << r.error().message;
      ids.insert(r->node_id);
    }
    EXPECT_EQ(ids.size(), claimers.size()) << "round " << round;
  }
}

void a_take_over_starts_above_the_old_reservation(const LeasedStoreUnderTest& store,
                                                  coord::LeasedClaim& old_holder,
                                                  const std::function<void()>& end_claim) {
  const coord::StepResult extended_first = old_holder.extend_reservation(true, milliseconds{0});
  ASSERT_EQ(extended_first.outcome, coord::StepOutcome::kDone) << extended_first.message;
  const milliseconds old_reservation = old_holder.reservation();
  end_claim();

  auto successor = store.make(1, false);
  auto claim = successor->claim();
  ASSERT_TRUE(claim.ok()) << claim.error().message;
  ASSERT_EQ(claim->node_id, 1u);
  EXPECT_EQ(claim->store_reservation, old_reservation);
  EXPECT_GE(claim->floor, old_reservation);
  // The first reservation is the floor, less the store clock's grain.
  EXPECT_GE(*claim->ceiling + milliseconds{1000}, claim->floor);

  const milliseconds successor_reservation = store.stored_reservation(1);
  // Within what the takeover rule lets it reserve: the fence refuses it.
  const coord::StepResult extended = old_holder.extend_reservation(true, wall_now() + seconds{1});
  EXPECT_EQ(extended.outcome, coord::StepOutcome::kClaimLost) << extended.message;
  EXPECT_EQ(old_holder.keep_alive().outcome, coord::StepOutcome::kClaimLost);
  EXPECT_EQ(store.stored_reservation(1), successor_reservation);
  EXPECT_TRUE(old_holder.release(old_reservation - seconds{10}).ok());
  EXPECT_EQ(store.stored_reservation(1), successor_reservation);
  EXPECT_TRUE(store.claim_exists(1));
  a_take_over_issues_above(*claim, *successor, old_reservation);
}

void a_take_over_issues_above(const Claim& claim, Coordinator& coordinator,
                              milliseconds old_reservation) {
  // The first reservation is the floor, raised as the clock nears it.
  ASSERT_TRUE(eventually([&] { return coordinator.reservation() > claim.floor; },
                         milliseconds{20'000}));
  GeneratorOptions options;
  options.layout = small_layout();
  options.worker_id = claim.worker_id;
  options.start_above = claim.floor;
  options.external_ceiling = coordinator.reservation();
  options.max_drift = milliseconds{20000};  // the old reservation is several s ahead
  auto generator = Generator::create(options);
  ASSERT_TRUE(generator.ok()) << generator.error().message;
  auto id = (*generator)->next();
  ASSERT_TRUE(id.ok()) << id.error().message;
  EXPECT_GT(decode(small_layout(), *id)->timestamp, old_reservation);
}

void emptied_store_starts_the_next_claimer_above(const LeasedStoreUnderTest& store) {
  const milliseconds lease_ttl = store.lease_ttl;
  store.mark_new_cluster();
  auto holder = store.make(1, true);
  auto held = holder->claim();
  ASSERT_TRUE(held.ok()) << held.error().message;
  EXPECT_FALSE(held->store_created_now);  // the operator's marker was there
  EXPECT_EQ(held->store_created, milliseconds{0});
  std::this_thread::sleep_for(milliseconds{300});  // serving, its reservation raised
  ASSERT_TRUE(holder->may_issue());
  const milliseconds lost_at = wall_now();
  store.lose_data();

  auto successor = store.make(1, true);
  auto claim = successor->claim();
  ASSERT_TRUE(claim.ok()) << claim.error().message;
  EXPECT_TRUE(claim->store_created_now);  // no trace of the cluster was left
  EXPECT_GE(claim->store_created, lost_at);
  // The holder stops within its lease and says why; from then on its
  // reservation, the last ID it can issue, is final.
  ASSERT_TRUE(eventually([&] { return !holder->may_issue(); }, lease_ttl + milliseconds{1000}));
  const CoordinatorStats stats = holder->stats();
  EXPECT_GE(stats.lost_claims + stats.fencing_events, 1u);
  EXPECT_FALSE(stats.last_loss.empty());
  EXPECT_GE(claim->floor, holder->reservation())
      << "the second claimer could repeat IDs the holder issued after the store lost its data";
  EXPECT_GE(claim->floor, lost_at + lease_ttl);
}

void a_record_restored_under_a_live_holder_is_never_trusted(const LeasedStoreUnderTest& store) {
  store.mark_new_cluster();
  auto earlier = store.make(1, true);
  ASSERT_TRUE(earlier->claim().ok());
  ASSERT_TRUE(earlier->release(wall_now()).ok());  // lowered to its floor
  const milliseconds old_reservation = store.stored_reservation(1);
  ASSERT_GT(old_reservation, milliseconds{0});
  const std::function<void()> restore = store.back_up();

  auto holder = store.make_claim(1);
  auto held = holder->claim(std::nullopt);
  ASSERT_TRUE(held.ok()) << held.error().message;
  EXPECT_EQ(held->store_reservation, old_reservation);
  // As far as the takeover rule lets it reserve now (a wanted unit 1 s on).
  const coord::StepResult raised = holder->extend_reservation(true, wall_now() + seconds{1});
  ASSERT_EQ(raised.outcome, coord::StepOutcome::kDone) << raised.message;
  const std::chrono::nanoseconds deadline = holder->deadline();
  const milliseconds hidden = holder->reservation();
  restore();  // the store goes back: id 1 free, its reservation the old one
  EXPECT_EQ(store.stored_reservation(1), old_reservation);
  EXPECT_FALSE(store.claim_exists(1));

  auto successor = store.make(1, true);
  auto claim = successor->claim();
  ASSERT_TRUE(claim.ok()) << claim.error().message;
  EXPECT_FALSE(claim->store_created_now);  // nothing in the store says it went back
  EXPECT_EQ(claim->store_reservation, old_reservation);
  // The holder stops within its lease. Each renewal finds its claim gone,
  // or fails where the restored store does not take the holder back (a
  // connection the restart cut, a ZooKeeper session that saw later writes
  // than the backup holds), until one finds it gone or the lease ends
  // unrenewed. It never renews nor raises its reservation again, and issues
  // at or below that reservation.
  for (bool lost = false; !lost && coord::boot_time_now() < deadline;) {
    const coord::StepResult renewed = holder->keep_alive();
    lost = renewed.outcome == coord::StepOutcome::kClaimLost;
    ASSERT_TRUE(lost || renewed.outcome == coord::StepOutcome::kStoreFailed) << renewed.message;
    if (!lost) std::this_thread::sleep_for(milliseconds{100});
  }
  const coord::StepResult extended = holder->extend_reservation(true, milliseconds{0});
  EXPECT_TRUE(extended.outcome == coord::StepOutcome::kClaimLost ||
              extended.outcome == coord::StepOutcome::kStoreFailed)
      << extended.message;
  EXPECT_EQ(holder->deadline(), deadline) << "the hidden holder renewed its lease";
  EXPECT_EQ(holder->reservation(), hidden) << "the hidden holder raised its reservation";
  EXPECT_GE(claim->floor, old_reservation);
  EXPECT_GE(claim->floor, hidden) << "the second claimer could repeat IDs the hidden holder issued";
  EXPECT_GE(store.stored_reservation(1), claim->floor - milliseconds{1000});
}

}  // namespace snowid::test
