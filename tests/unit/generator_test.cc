// The generator under an injected manual clock: every clock policy, rollbacks,
// sequence exhaustion, batches and the random sequence start.
#include "snowid/generator.h"

#include <gtest/gtest.h>

#include <map>
#include <random>
#include <set>
#include <vector>

namespace snowid {
namespace {

using std::chrono::milliseconds;

constexpr milliseconds kStart{1'790'000'000'000};

class GeneratorTest : public ::testing::Test {
 protected:
  ManualClock clock{kStart};

  std::unique_ptr<Generator> make(GeneratorOptions options) {
    options.clock = &clock;
    auto g = Generator::create(options);
    EXPECT_TRUE(g.ok()) << (g.ok() ? "" : g.error().message);
    return g.ok() ? std::move(*g) : nullptr;
  }
  std::unique_ptr<Generator> make(ClockPolicy policy) {
    GeneratorOptions options;
    options.clock_policy = policy;
    return make(options);
  }
  static IdFields fields(Id id) { return *decode(Layout{}, id); }
};

TEST_F(GeneratorTest, IssuesIncreasingIdsCarryingNodeAndTime) {
  GeneratorOptions options;
  options.datacenter_id = 17;
  options.worker_id = 25;
  auto g = make(options);
  Id previous = 0;
  for (int i = 0; i < 10; ++i) {
    const Id id = *g->next();
    EXPECT_GT(id, previous);
    previous = id;
    const IdFields f = fields(id);
    EXPECT_EQ(f.timestamp, kStart);
    EXPECT_EQ(f.datacenter, 17u);
    EXPECT_EQ(f.worker, 25u);
    EXPECT_EQ(f.sequence, static_cast<std::uint64_t>(i));
  }
  clock.advance(milliseconds{1});
  EXPECT_EQ(fields(*g->next()).sequence, 0u);
}

TEST_F(GeneratorTest, RefusesNodeIdsOutsideTheLayout) {
  GeneratorOptions options;
  options.clock = &clock;
  options.worker_id = 32;
  auto g = Generator::create(options);
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.error().code, ErrorCode::kInvalidArgument);
  EXPECT_NE(g.error().message.find("worker id 32 is out of range 0..31"), std::string::npos);
}

// Under reject and wait, a used-up time unit waits for the next one (at most
// about one unit); under monotonic it borrows the next unit without waiting.
TEST_F(GeneratorTest, ExhaustedUnitWaitsForTheNextUnderRejectAndWait) {
  for (ClockPolicy policy : {ClockPolicy::kReject, ClockPolicy::kWait}) {
    clock.set(kStart);
    auto g = make(policy);
    const auto slept_before = clock.slept();
    Id last = 0;
    for (int i = 0; i < 4096; ++i) last = *g->next();
    EXPECT_EQ(fields(last).sequence, 4095u);
    EXPECT_EQ(clock.slept(), slept_before);
    const Id next = *g->next();
    EXPECT_GT(next, last);
    EXPECT_EQ(fields(next).timestamp, kStart + milliseconds{1});
    EXPECT_EQ(fields(next).sequence, 0u);
    EXPECT_GT(clock.slept(), slept_before);
    EXPECT_LE(clock.slept() - slept_before, milliseconds{2});
  }
}

TEST_F(GeneratorTest, MonotonicBorrowsFutureUnitsWithinMaxDrift) {
  GeneratorOptions options;
  options.max_drift = milliseconds{3};
  auto g = make(options);
  Id previous = 0;
  for (int i = 0; i < 4 * 4096; ++i) {
    const Id id = *g->next();
    ASSERT_GT(id, previous);
    previous = id;
  }
  EXPECT_EQ(fields(previous).timestamp, kStart + milliseconds{3});
  EXPECT_EQ(clock.slept(), milliseconds{0});
  // The fifth unit would lead the clock by 4 ms: wait for the clock instead.
  const Id id = *g->next();
  EXPECT_GT(id, previous);
  EXPECT_EQ(fields(id).timestamp, kStart + milliseconds{4});
  EXPECT_GE(clock.now(), kStart + milliseconds{1});
}

struct RollbackCase {
  ClockPolicy policy;
  milliseconds step_back;
  bool issues;  // whether the call after the step back succeeds
};

class RollbackTest : public GeneratorTest,
                     public ::testing::WithParamInterface<RollbackCase> {};

// A step back of 1 ms, 10 ms, 10 s and 1 h under every policy: either a
// refusal that consumes nothing, or an ID above every earlier one.
TEST_P(RollbackTest, NeverRepeatsOrGoesBackwards) {
  const RollbackCase c = GetParam();
  GeneratorOptions options;
  options.clock_policy = c.policy;
  options.max_wait = milliseconds{5};
  options.max_drift = milliseconds{1000};
  auto g = make(options);
  std::set<Id> seen;
  Id last = 0;
  for (int i = 0; i < 3; ++i) {
    last = *g->next();
    seen.insert(last);
  }
  clock.advance(-c.step_back);
  const auto slept_before = clock.slept();
  auto after = g->next();
  EXPECT_EQ(after.ok(), c.issues) << (after.ok() ? "" : after.error().message);
  if (after.ok()) {
    EXPECT_GT(*after, last);
    last = *after;
    seen.insert(last);
  } else {
    EXPECT_EQ(after.error().code, ErrorCode::kClockBehind);
    EXPECT_NE(after.error().message.find("ms"), std::string::npos);
    // Refusing never waits beyond the policy's bound.
    EXPECT_LE(clock.slept() - slept_before, options.max_wait + milliseconds{1});
  }
  // Time returns to where it was, and beyond: IDs continue strictly above.
  clock.set(kStart);
  for (int i = 0; i < 5000; ++i) {
    auto id = g->next();
    ASSERT_TRUE(id.ok()) << id.error().message;
    ASSERT_GT(*id, last);
    ASSERT_TRUE(seen.insert(*id).second);
    last = *id;
    if (i % 100 == 0) clock.advance(milliseconds{1});
  }
  EXPECT_GE(g->stats().clock_behind_events, 1u);
}

INSTANTIATE_TEST_SUITE_P(
    AllPolicies, RollbackTest,
    ::testing::Values(
        RollbackCase{ClockPolicy::kReject, milliseconds{1}, false},
        RollbackCase{ClockPolicy::kReject, milliseconds{10}, false},
        RollbackCase{ClockPolicy::kReject, milliseconds{10'000}, false},
        RollbackCase{ClockPolicy::kReject, milliseconds{3'600'000}, false},
        RollbackCase{ClockPolicy::kWait, milliseconds{1}, true},
        RollbackCase{ClockPolicy::kWait, milliseconds{10}, false},
        RollbackCase{ClockPolicy::kWait, milliseconds{10'000}, false},
        RollbackCase{ClockPolicy::kWait, milliseconds{3'600'000}, false},
        RollbackCase{ClockPolicy::kMonotonic, milliseconds{1}, true},
        RollbackCase{ClockPolicy::kMonotonic, milliseconds{10}, true},
        RollbackCase{ClockPolicy::kMonotonic, milliseconds{10'000}, false},
        RollbackCase{ClockPolicy::kMonotonic, milliseconds{3'600'000}, false}));

TEST_F(GeneratorTest, RejectSaysByHowMuchTheClockMovedBack) {
  auto g = make(ClockPolicy::kReject);
  ASSERT_TRUE(g->next().ok());
  clock.advance(milliseconds{-10});
  auto id = g->next();
  ASSERT_FALSE(id.ok());
  EXPECT_NE(id.error().message.find("10 ms behind"), std::string::npos) << id.error().message;
}

TEST_F(GeneratorTest, WaitPolicyWaitsOutASmallRollback) {
  GeneratorOptions options;
  options.clock_policy = ClockPolicy::kWait;
  options.max_wait = milliseconds{5};
  auto g = make(options);
  const Id before = *g->next();
  clock.advance(milliseconds{-4});
  const Id after = *g->next();
  EXPECT_GT(after, before);
  EXPECT_GE(clock.slept(), milliseconds{3});
  EXPECT_GE(clock.now(), kStart);
}

// With a 1 s unit, a 1 ms step back across a second boundary is a 1 ms wait,
// not a whole unit.
TEST_F(GeneratorTest, WaitIsMeasuredInMillisecondsNotUnits) {
  GeneratorOptions options;
  options.clock_policy = ClockPolicy::kWait;
  options.max_wait = milliseconds{5};
  options.layout.time_unit = milliseconds{1000};
  options.layout.timestamp_bits = 31;
  options.layout.sequence_bits = 22;
  options.layout.datacenter_bits = options.layout.worker_bits = 5;
  const milliseconds second_start{(kStart.count() / 1000 + 1) * 1000};
  clock.set(second_start);
  auto g = make(options);
  const Id before = *g->next();
  clock.set(second_start - milliseconds{1});
  auto after = g->next();
  ASSERT_TRUE(after.ok()) << after.error().message;
  EXPECT_GT(*after, before);
  EXPECT_LE(clock.slept(), milliseconds{2});
}

// The mistake of the original Snowflake: on a rollback it reset the sequence
// before checking the clock, so when time came back to the same millisecond
// it handed out sequence numbers again. The check must precede any change.
TEST_F(GeneratorTest, RollbackCheckComesBeforeTheSequenceIsTouched) {
  for (ClockPolicy policy : {ClockPolicy::kReject, ClockPolicy::kWait, ClockPolicy::kMonotonic}) {
    clock.set(kStart);
    GeneratorOptions options;
    options.clock_policy = policy;
    options.max_drift = milliseconds{0};
    options.max_wait = milliseconds{0};
    auto g = make(options);
    std::set<Id> seen;
    for (int i = 0; i < 3; ++i) seen.insert(*g->next());
    clock.advance(milliseconds{-1});
    for (int i = 0; i < 3; ++i) EXPECT_FALSE(g->next().ok());
    clock.set(kStart);
    const Id id = *g->next();
    EXPECT_TRUE(seen.insert(id).second) << "repeated ID under " << clock_policy_name(policy);
    EXPECT_EQ(fields(id).sequence, 3u);
  }
}

// Property: under a clock that jumps around at random, every issued ID is
// unique and strictly increasing, whatever the policy.
TEST_F(GeneratorTest, RandomClockWalkNeverRepeats) {
  for (ClockPolicy policy : {ClockPolicy::kReject, ClockPolicy::kWait, ClockPolicy::kMonotonic}) {
    clock.set(kStart);
    GeneratorOptions options;
    options.clock_policy = policy;
    options.max_drift = milliseconds{20};
    options.max_wait = milliseconds{5};
    options.sequence_start = SequenceStart::kRandom;
    options.layout.sequence_bits = 4;  // small units, so exhaustion happens often
    auto g = make(options);
    std::mt19937_64 rng(7);
    std::uniform_int_distribution<int> step(-20, 30);  // forwards on average
    Id last = -1;
    int issued = 0;
    for (int i = 0; i < 100000; ++i) {
      if (i % 7 == 0) clock.advance(milliseconds{step(rng)});
      auto id = g->next();
      if (!id.ok()) continue;
      ASSERT_GT(*id, last) << "policy " << clock_policy_name(policy) << " call " << i;
      last = *id;
      ++issued;
    }
    EXPECT_GT(issued, 1000) << clock_policy_name(policy);
  }
}

TEST_F(GeneratorTest, BatchesSpanTimeUnitsAndStayIncreasing) {
  for (ClockPolicy policy : {ClockPolicy::kReject, ClockPolicy::kMonotonic}) {
    clock.set(kStart);
    auto g = make(policy);
    std::vector<Id> ids(10000);
    ASSERT_TRUE(g->next(ids).ok());
    std::map<std::int64_t, int> per_unit;
    for (std::size_t i = 0; i < ids.size(); ++i) {
      if (i > 0) {
        ASSERT_GT(ids[i], ids[i - 1]);
      }
      ++per_unit[fields(ids[i]).timestamp.count()];
    }
    EXPECT_EQ(per_unit.size(), 3u);
    for (const auto& [unit, count] : per_unit) EXPECT_LE(count, 4096);
    const Id after = *g->next();
    EXPECT_GT(after, ids.back());
  }
}

TEST_F(GeneratorTest, BlockNeverCrossesAUnit) {
  auto g = make(ClockPolicy::kReject);
  auto first = g->next_block(4000);
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(first->count, 4000u);
  auto second = g->next_block(4000);
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(second->count, 96u);
  EXPECT_EQ(second->first, first->last() + 1);
  EXPECT_FALSE(g->next_block(0).ok());
}

TEST_F(GeneratorTest, BlockStrideFollowsSequencePosition) {
  GeneratorOptions options;
  options.layout = *preset("sonyflake");
  options.worker_id = 7;
  clock.set(options.layout.epoch + milliseconds{123450});
  auto g = make(options);
  auto block = g->next_block(5);
  ASSERT_TRUE(block.ok());
  EXPECT_EQ(block->stride, Id{1} << 16);
  for (std::uint32_t i = 0; i < block->count; ++i) {
    const IdFields f = *decode(options.layout, block->at(i));
    EXPECT_EQ(f.worker, 7u);
    EXPECT_EQ(f.sequence, i);
  }
}

// With one ID per time unit, a zero start makes every ID a multiple of
// 2^22 (so `id % N` sharding puts everything in one shard); a random start
// spreads IDs over residues.
TEST_F(GeneratorTest, RandomSequenceStartSpreadsResidues) {
  GeneratorOptions options;
  auto zero = make(options);
  options.sequence_start = SequenceStart::kRandom;
  auto random = make(options);
  constexpr int kShards = 8, kUnits = 40000;
  std::array<int, kShards> zero_shards{}, random_shards{};
  for (int i = 0; i < kUnits; ++i) {
    clock.advance(milliseconds{1});
    ++zero_shards[static_cast<std::size_t>(*zero->next() % kShards)];
    ++random_shards[static_cast<std::size_t>(*random->next() % kShards)];
  }
  EXPECT_EQ(zero_shards[0], kUnits);
  for (int count : random_shards) {
    EXPECT_GT(count, kUnits / kShards * 85 / 100);
    EXPECT_LT(count, kUnits / kShards * 115 / 100);
  }
  // The start stays below its bound (4096 / 32 = 128 by default).
  for (int i = 0; i < 1000; ++i) {
    clock.advance(milliseconds{1});
    EXPECT_LT(fields(*random->next()).sequence, 128u);
  }
}

TEST_F(GeneratorTest, RefusesBeforeTheEpoch) {
  clock.set(Layout{}.epoch - milliseconds{5});
  auto g = make(GeneratorOptions{});
  auto id = g->next();
  ASSERT_FALSE(id.ok());
  EXPECT_EQ(id.error().code, ErrorCode::kClockBeforeEpoch);
}

TEST_F(GeneratorTest, RefusesOnceTheTimestampFieldIsFull) {
  GeneratorOptions options;
  options.layout.timestamp_bits = 10;  // 1024 ms of life
  options.layout.epoch = kStart - milliseconds{1000};
  auto g = make(options);
  ASSERT_TRUE(g->next().ok());
  clock.advance(milliseconds{30});
  auto id = g->next();
  ASSERT_FALSE(id.ok());
  EXPECT_EQ(id.error().code, ErrorCode::kTimestampOverflow);
  EXPECT_GE(g->stats().refusals, 1u);
}

TEST_F(GeneratorTest, StatsReportDriftAheadOfTheClock) {
  GeneratorOptions options;
  options.max_drift = milliseconds{50};
  auto g = make(options);
  std::vector<Id> ids(4096 * 5);
  ASSERT_TRUE(g->next(ids).ok());
  EXPECT_EQ(g->stats().drift, milliseconds{4});
  EXPECT_EQ(g->stats().last_issued, kStart + milliseconds{4});
}

TEST_F(GeneratorTest, StartsStrictlyAboveAnExternalFloor) {
  // A coordinator read a reservation 300 ms ahead of this node's clock: the
  // monotonic policy starts above it at once (within max_drift).
  GeneratorOptions options;
  options.start_above = kStart + milliseconds{300};
  auto g = make(options);
  ASSERT_NE(g, nullptr);
  EXPECT_GT(fields(*g->next()).timestamp, options.start_above);
}

// A caller's own floor (ObjectIds after a restart): the monotonic policy runs
// ahead to it within max_drift, later calls stay above it, and a floor
// beyond max_drift, or any floor ahead under reject, is refused.
TEST_F(GeneratorTest, BlockAtOrAfterAFloorRunsAheadWithinThePolicy) {
  auto g = make(ClockPolicy::kMonotonic);
  const Id before = *g->next();
  auto block = g->next_block_at_or_after(10, kStart + milliseconds{700});
  ASSERT_TRUE(block.ok()) << block.error().message;
  EXPECT_EQ(fields(block->first).timestamp, kStart + milliseconds{700});
  EXPECT_GT(block->first, before);
  EXPECT_GT(*g->next(), block->last());
  auto far = g->next_block_at_or_after(1, kStart + milliseconds{5000});
  ASSERT_FALSE(far.ok());
  EXPECT_EQ(far.error().code, ErrorCode::kClockBehind);
  // A floor already passed changes nothing.
  const Id last = *g->next();
  EXPECT_GT(g->next_block_at_or_after(1, kStart)->first, last);

  auto rejecting = make(ClockPolicy::kReject);
  auto refused = rejecting->next_block_at_or_after(1, kStart + milliseconds{700});
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().code, ErrorCode::kClockBehind);
  EXPECT_EQ(rejecting->next_block_at_or_after(0, kStart).error().code, ErrorCode::kInvalidArgument);
}

TEST_F(GeneratorTest, ExternalFloorBeyondTheClockPolicyRefusesToStart) {
  GeneratorOptions options;
  options.clock = &clock;
  options.clock_policy = ClockPolicy::kReject;
  options.start_above = kStart + milliseconds{300};
  auto g = Generator::create(options);
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.error().code, ErrorCode::kClockBehind);
  EXPECT_NE(g.error().message.find("301 ms behind"), std::string::npos) << g.error().message;
  EXPECT_NE(g.error().message.find("start_above"), std::string::npos) << g.error().message;
}

TEST_F(GeneratorTest, NeverIssuesPastTheExternalCeilingUntilRaised) {
  GeneratorOptions options;
  options.external_ceiling = kStart + milliseconds{2};
  auto g = make(options);
  ASSERT_NE(g, nullptr);
  EXPECT_TRUE(g->next().ok());
  clock.advance(milliseconds{2});
  EXPECT_TRUE(g->next().ok());  // the unit starting at the ceiling itself is allowed
  EXPECT_TRUE(g->readiness().ok());
  clock.advance(milliseconds{1});
  auto refused = g->next();
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().code, ErrorCode::kUnavailable);
  EXPECT_FALSE(g->readiness().ok());
  g->raise_external_ceiling(kStart);  // lower: ignored
  EXPECT_FALSE(g->next().ok());
  g->raise_external_ceiling(kStart + milliseconds{10});
  auto issued = g->next();
  ASSERT_TRUE(issued.ok());
  EXPECT_EQ(fields(*issued).timestamp, kStart + milliseconds{3});
  EXPECT_EQ(g->stats().external_ceiling, kStart + milliseconds{10});
}

TEST_F(GeneratorTest, MonotonicBorrowingStopsAtTheExternalCeiling) {
  // A burst that borrows future units must not run past the reservation.
  GeneratorOptions options;
  options.layout.sequence_bits = 1;
  options.external_ceiling = kStart + milliseconds{3};
  auto g = make(options);
  ASSERT_NE(g, nullptr);
  int issued = 0;
  while (g->next().ok()) ++issued;
  EXPECT_EQ(issued, 8);  // units kStart .. kStart+3, two IDs each
}

TEST(ClockPolicyNames, RoundTrip) {
  for (auto p : {ClockPolicy::kReject, ClockPolicy::kWait, ClockPolicy::kMonotonic}) {
    EXPECT_EQ(*parse_clock_policy(clock_policy_name(p)), p);
  }
  EXPECT_FALSE(parse_clock_policy("sometimes").ok());
  EXPECT_FALSE(parse_sequence_start("one").ok());
}

// Without a state file, a successor starts from the clock: a generator that
// issued ahead of it (a burst borrowing future units) ends only once the
// clock has passed its last unit, so back-to-back generators never overlap.
TEST_F(GeneratorTest, DestroyedOnlyOnceTheClockPassedItsIds) {
  Id last = 0;
  for (int run = 0; run < 3; ++run) {
    auto g = make(ClockPolicy::kMonotonic);
    ASSERT_NE(g, nullptr);
    std::vector<Id> ids(20 * 4096);  // 20 units' worth within one clock millisecond
    ASSERT_TRUE(g->next(ids).ok());
    EXPECT_GT(ids.front(), last) << "run " << run << " repeated an earlier run's IDs";
    last = ids.back();
    EXPECT_GT(fields(last).timestamp, clock.now());
    g.reset();
    EXPECT_GT(clock.now(), fields(last).timestamp);
  }
}

}  // namespace
}  // namespace snowid
