// UUIDv7, ULID and ObjectId: the published examples decode to their
// documented parts, a million IDs of each kind strictly increase, a clock
// stepping back and a restart with the clock set back keep the order.
#include "snowid/id_formats.h"

#include <gtest/gtest.h>

#include <thread>
#include <vector>

#include "subprocess.h"
#include "time_text.h"

namespace snowid {
namespace {

using std::chrono::milliseconds;

constexpr milliseconds kStart{1'790'000'000'123};
constexpr IdKind kKinds[] = {IdKind::kUuid7, IdKind::kUlid, IdKind::kObjectId};

template <typename T>
T decoded_as(std::string_view text) {
  auto decoded = decode_text(text, Layout{});
  EXPECT_TRUE(decoded.ok()) << (decoded.ok() ? "" : decoded.error().message);
  EXPECT_TRUE(std::holds_alternative<T>(*decoded)) << text;
  return std::get<T>(*decoded);
}

std::string time_of(std::chrono::sys_time<milliseconds> time) {
  return format_time(time.time_since_epoch());
}

// RFC 9562, Appendix A.6: "Example of a UUIDv7 Value".
TEST(DecodeText, Rfc9562UuidV7Example) {
  const auto uuid = decoded_as<DecodedUuid>("017F22E2-79B0-7CC3-98C4-DC0C0C07398F");
  EXPECT_EQ(uuid.text, "017f22e2-79b0-7cc3-98c4-dc0c0c07398f");
  EXPECT_EQ(uuid.version, 7);
  EXPECT_EQ(uuid.variant, "rfc9562");
  ASSERT_TRUE(uuid.time);
  EXPECT_EQ(uuid.time->time_since_epoch(), milliseconds{0x017F22E279B0});
  EXPECT_EQ(time_of(*uuid.time), "2022-02-22T19:22:22.000Z");
}

// RFC 9562, Appendix A.5 (v6) and A.1 (v1): the same moment, Tuesday,
// February 22, 2022 2:22:22.00 PM GMT-05:00.
TEST(DecodeText, Rfc9562UuidV6AndV1Examples) {
  const auto v6 = decoded_as<DecodedUuid>("1EC9414C-232A-6B00-B3C8-9F6BDECED846");
  EXPECT_EQ(v6.version, 6);
  EXPECT_EQ(v6.variant, "rfc9562");
  ASSERT_TRUE(v6.time);
  EXPECT_EQ(time_of(*v6.time), "2022-02-22T19:22:22.000Z");
  const auto v1 = decoded_as<DecodedUuid>("C232AB00-9414-11EC-B3C8-9F6BDECED846");
  EXPECT_EQ(v1.version, 1);
  ASSERT_TRUE(v1.time);
  EXPECT_EQ(time_of(*v1.time), "2022-02-22T19:22:22.000Z");
  // The 32-digit form is the same UUID.
  const auto bare = decoded_as<DecodedUuid>("c232ab00941411ecb3c89f6bdeced846");
  EXPECT_EQ(bare.text, "c232ab00-9414-11ec-b3c8-9f6bdeced846");
  EXPECT_EQ(bare.time, v1.time);
}

TEST(DecodeText, UuidsWithoutATimeAndOtherVariants) {
  const auto v4 = decoded_as<DecodedUuid>("919108f7-52d1-4320-9bac-f847db4148a8");
  EXPECT_EQ(v4.version, 4);
  EXPECT_EQ(v4.variant, "rfc9562");
  EXPECT_FALSE(v4.time);
  EXPECT_EQ(decoded_as<DecodedUuid>("00000000-0000-0000-0000-000000000000").variant, "ncs");
  EXPECT_EQ(decoded_as<DecodedUuid>("ffffffff-ffff-ffff-ffff-ffffffffffff").variant, "future");
  EXPECT_EQ(decoded_as<DecodedUuid>("00000000-0000-0000-c000-000000000000").variant, "microsoft");
}

// github.com/ulid/spec: ulid(1469918176385) is "01ARYZ6S41TSV4RRFFQ69G5FAV"
// (its seed-time example). The spec's other example, 01ARZ3NDEKTSV4RRFFQ69G5FAV,
// carries 1469922850259 ms (01ARZ3NDEK), as the reference decodeTime gives.
TEST(DecodeText, UlidSpecExamples) {
  const auto seeded = decoded_as<DecodedUlid>("01ARYZ6S41TSV4RRFFQ69G5FAV");
  EXPECT_EQ(seeded.time.time_since_epoch(), milliseconds{1469918176385});
  const auto ulid = decoded_as<DecodedUlid>("01ARZ3NDEKTSV4RRFFQ69G5FAV");
  EXPECT_EQ(ulid.time.time_since_epoch(), milliseconds{1469922850259});
  // The 80 bits after the timestamp: TSV4RRFFQ69G5FAV in both.
  EXPECT_EQ(ulid.randomness, seeded.randomness);
  EXPECT_EQ(ulid.text, "01ARZ3NDEKTSV4RRFFQ69G5FAV");
  EXPECT_EQ(decoded_as<DecodedUlid>("01arz3ndektsv4rrffq69g5fav").text, ulid.text);
  // The largest ULID, and one above it.
  EXPECT_EQ(decoded_as<DecodedUlid>("7ZZZZZZZZZZZZZZZZZZZZZZZZZ").time.time_since_epoch(),
            milliseconds{(std::int64_t{1} << 48) - 1});
  auto above = decode_text("80000000000000000000000000", Layout{});
  ASSERT_FALSE(above.ok());
  EXPECT_NE(above.error().message.find("above the largest"), std::string::npos);
  auto bad = decode_text("01ARZ3NDEKTSV4RRFFQ69G5FAU", Layout{});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("'U' is not a Crockford"), std::string::npos);
}

// MongoDB's manual, ObjectId(): ObjectId("507f1f77bcf86cd799439011"),
// getTimestamp() ISODate("2012-10-17T21:13:27Z").
TEST(DecodeText, MongoDbObjectIdExample) {
  const auto oid = decoded_as<DecodedObjectId>("507f1f77bcf86cd799439011");
  EXPECT_EQ(format_time(oid.time.time_since_epoch()), "2012-10-17T21:13:27.000Z");
  EXPECT_EQ(oid.process_random, 0xbcf86cd799u);
  EXPECT_EQ(oid.counter, 0x439011u);
}

TEST(DecodeText, DecimalIsASnowflakeIdAndOtherShapesAreRefused) {
  const auto snowflake = decoded_as<DecodedSnowflake>("1541815603606036480");
  EXPECT_EQ(snowflake.id, 1541815603606036480);
  EXPECT_EQ(snowflake.fields, *decode(Layout{}, 1541815603606036480));
  for (std::string_view bad : {"", "abc", "017F22E2-79B0-7CC3-98C4_DC0C0C07398F",
                               "507f1f77bcf86cd79943901g", "9223372036854775808"}) {
    auto decoded = decode_text(bad, Layout{});
    EXPECT_FALSE(decoded.ok()) << bad;
    if (!decoded.ok()) {
      EXPECT_EQ(decoded.error().code, ErrorCode::kInvalidArgument) << bad;
    }
  }
}

class FormattedIdTest : public ::testing::Test {
 protected:
  ManualClock clock{kStart};

  std::unique_ptr<Generator> make_generator(GeneratorOptions options = {}) {
    options.clock = &clock;
    auto generator = Generator::create(options);
    EXPECT_TRUE(generator.ok()) << (generator.ok() ? "" : generator.error().message);
    return generator.ok() ? std::move(*generator) : nullptr;
  }
  static std::unique_ptr<FormattedIdSource> make_source(Generator& generator) {
    auto source = FormattedIdSource::create(generator);
    EXPECT_TRUE(source.ok()) << (source.ok() ? "" : source.error().message);
    return source.ok() ? std::move(*source) : nullptr;
  }
};

TEST_F(FormattedIdTest, EachKindCarriesItsTimestampVersionAndVariant) {
  GeneratorOptions options;
  options.worker_id = 3;
  auto generator = make_generator(options);
  auto source = make_source(*generator);
  const auto uuid = *source->next(IdKind::kUuid7);
  const auto decoded_uuid = decoded_as<DecodedUuid>(to_text(uuid));
  EXPECT_EQ(decoded_uuid.version, 7);
  EXPECT_EQ(decoded_uuid.variant, "rfc9562");
  EXPECT_EQ(decoded_uuid.time->time_since_epoch(), kStart);
  EXPECT_EQ(to_text(uuid).size(), 36u);

  const auto ulid = *source->next(IdKind::kUlid);
  const std::string ulid_text = to_text(ulid);
  EXPECT_EQ(ulid_text.size(), 26u);
  EXPECT_EQ(decoded_as<DecodedUlid>(ulid_text).time.time_since_epoch(), kStart);

  const auto oid = *source->next(IdKind::kObjectId);
  const std::string oid_text = to_text(oid);
  EXPECT_EQ(oid_text.size(), 24u);
  const auto decoded_oid = decoded_as<DecodedObjectId>(oid_text);
  EXPECT_EQ(decoded_oid.time.time_since_epoch(),
            std::chrono::duration_cast<std::chrono::seconds>(kStart));
  EXPECT_EQ(decoded_oid.process_random, source->object_id_process_random());
}

// The text forms sort as the bytes do, and the bytes as the IDs were issued.
void expect_strictly_increasing(const std::vector<FormattedId>& ids) {
  for (std::size_t i = 1; i < ids.size(); ++i) {
    if (!(ids[i - 1].bytes < ids[i].bytes)) {
      FAIL() << "ID " << i << " (" << to_text(ids[i]) << ") is not above the one before ("
             << to_text(ids[i - 1]) << ")";
    }
  }
  for (std::size_t i = 1; i < ids.size(); i += 9973) {
    ASSERT_LT(to_text(ids[i - 1]), to_text(ids[i]));
  }
}

// A million of each kind, from one generator, with the clock advancing 1 ms
// every 1000 IDs (the sequence runs high, the time moves on) and once in a
// while stepping back 300 ms (within max_drift: the generator runs ahead).
TEST_F(FormattedIdTest, AMillionOfEachKindStrictlyIncreaseThroughClockStepsBack) {
  for (IdKind kind : kKinds) {
    clock.set(kStart + milliseconds{10'000'000 * (static_cast<int>(kind) + 1)});
    auto generator = make_generator();
    auto source = make_source(*generator);
    std::vector<FormattedId> ids(1'000'000);
    std::span<FormattedId> rest(ids);
    int step = 0;
    while (!rest.empty()) {
      const std::size_t n = std::min<std::size_t>(rest.size(), 1000);
      Status issued = source->next(kind, rest.first(n));
      ASSERT_TRUE(issued.ok()) << issued.error().message;
      rest = rest.subspan(n);
      clock.advance(++step % 397 == 0 ? milliseconds{-300} : milliseconds{1});
    }
    expect_strictly_increasing(ids);
    EXPECT_GT(generator->stats().clock_behind_events, 0u);
    std::vector<FormattedId> sorted = ids;
    std::sort(sorted.begin(), sorted.end());
    EXPECT_EQ(std::adjacent_find(sorted.begin(), sorted.end()), sorted.end());
  }
}

// Under reject, a clock step back refuses; nothing below the last ID is issued.
TEST_F(FormattedIdTest, RejectPolicyRefusesRatherThanGoBack) {
  GeneratorOptions options;
  options.clock_policy = ClockPolicy::kReject;
  auto generator = make_generator(options);
  auto source = make_source(*generator);
  for (IdKind kind : kKinds) {
    clock.advance(milliseconds{2000});
    const FormattedId before = *source->next(kind);
    clock.advance(milliseconds{-1500});
    auto refused = source->next(kind);
    ASSERT_FALSE(refused.ok());
    EXPECT_EQ(refused.error().code, ErrorCode::kClockBehind);
    clock.advance(milliseconds{1501});
    EXPECT_LT(before.bytes, source->next(kind)->bytes) << id_kind_name(kind);
  }
}

TEST_F(FormattedIdTest, ManyThreadsGetDistinctIncreasingIds) {
  auto generator = make_generator();
  auto source = make_source(*generator);
  for (IdKind kind : kKinds) {
    std::vector<std::vector<FormattedId>> per_thread(4, std::vector<FormattedId>(20'000));
    std::vector<std::thread> threads;
    for (auto& ids : per_thread) {
      threads.emplace_back([&, kind] {
        for (auto& id : ids) {
          auto next = source->next(kind);
          if (!next.ok()) {
            clock.advance(milliseconds{1});
            next = source->next(kind);
          }
          id = next.ok() ? *next : FormattedId{};
        }
      });
    }
    for (auto& thread : threads) thread.join();
    std::vector<FormattedId> all;
    for (const auto& ids : per_thread) {
      for (std::size_t i = 1; i < ids.size(); ++i) ASSERT_LT(ids[i - 1], ids[i]);
      all.insert(all.end(), ids.begin(), ids.end());
    }
    std::sort(all.begin(), all.end());
    EXPECT_EQ(std::adjacent_find(all.begin(), all.end()), all.end());
  }
}

// A crash (no checkpoint) and a restart with the clock 10 s behind: under
// the wait policy the generator waits the clock past the mark (up to
// max_start_wait, 10 s), under monotonic with continue_above_mark it runs
// ahead of it; either way the next IDs of every kind lie above the last.
TEST_F(FormattedIdTest, RestartWithTheClockTenSecondsBehindStaysAbove) {
  test::TempDir dir;
  for (bool wait : {true, false}) {
    GeneratorOptions options;
    options.state_file = dir.file(wait ? "wait.state" : "monotonic.state");
    clock.set(kStart);
    std::vector<FormattedId> last;
    {
      auto generator = make_generator(options);
      auto source = make_source(*generator);
      for (IdKind kind : kKinds) last.push_back(*source->next(kind));
      // Destroyed without checkpoint(): as after kill -9, the mark is the reservation.
    }
    clock.set(kStart - milliseconds{10'000});
    options.clock_policy = wait ? ClockPolicy::kWait : ClockPolicy::kMonotonic;
    options.max_start_wait = milliseconds{11'000};
    options.continue_above_mark = !wait;
    auto generator = make_generator(options);
    ASSERT_TRUE(generator);
    auto source = make_source(*generator);
    for (std::size_t i = 0; i < 3; ++i) {
      auto next = source->next(kKinds[i]);
      if (!next.ok() && kKinds[i] == IdKind::kObjectId) {
        // Refused until the second after the previous run's mark.
        EXPECT_EQ(next.error().code, ErrorCode::kClockBehind);
        EXPECT_NE(next.error().message.find("ObjectIds resume at"), std::string::npos);
        clock.advance(milliseconds{1600});
        next = source->next(kKinds[i]);
      }
      ASSERT_TRUE(next.ok()) << next.error().message;
      EXPECT_LT(last[i].bytes, next->bytes)
          << id_kind_name(kKinds[i]) << ": " << to_text(last[i]) << " then " << to_text(*next);
    }
  }
}

// Without the floor an ObjectId of a new process could sort below one of the
// process before it in the same second: the per-process random decides.
TEST_F(FormattedIdTest, ObjectIdsOfARestartedProcessStartInALaterSecond) {
  test::TempDir dir;
  GeneratorOptions options;
  options.state_file = dir.file("oid.state");
  std::vector<FormattedId> before;
  for (int run = 0; run < 20; ++run) {
    auto generator = make_generator(options);
    auto source = make_source(*generator);
    auto next = source->next(IdKind::kObjectId);
    if (!next.ok()) {
      clock.advance(milliseconds{1600});
      next = source->next(IdKind::kObjectId);
    }
    ASSERT_TRUE(next.ok()) << next.error().message;
    if (!before.empty()) {
      ASSERT_LT(before.back().bytes, next->bytes) << "run " << run;
    }
    before.push_back(*next);
    ASSERT_TRUE(generator->checkpoint().ok());
  }
}

// An ObjectId's seconds are 4 bytes (until 2106-02-07), its counter 3: a
// time or a layout beyond them is refused, not wrapped; other kinds go on.
TEST_F(FormattedIdTest, ObjectIdsRefuseWhatTheirFieldsCannotHold) {
  GeneratorOptions late;
  late.layout.epoch = milliseconds{4'102'444'800'000};  // 2100-01-01
  clock.set(milliseconds{4'300'000'000'000});           // 2106-04, past 2^32 s
  auto generator = make_generator(late);
  auto source = make_source(*generator);
  auto oid = source->next(IdKind::kObjectId);
  ASSERT_FALSE(oid.ok());
  EXPECT_EQ(oid.error().code, ErrorCode::kTimestampOverflow);
  EXPECT_TRUE(source->next(IdKind::kUuid7).ok());

  clock.set(kStart);
  GeneratorOptions wide;  // 16 sequence bits: 65,536,000 IDs a second
  wide.layout.timestamp_bits = 37;
  wide.layout.sequence_bits = 16;
  wide.layout.epoch = kStart - milliseconds{1000};
  auto wide_generator = make_generator(wide);
  auto wide_source = make_source(*wide_generator);
  auto refused = wide_source->next(IdKind::kObjectId);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().code, ErrorCode::kInvalidArgument);
  EXPECT_NE(refused.error().message.find("24-bit counter"), std::string::npos);
  EXPECT_TRUE(wide_source->next(IdKind::kUlid).ok());
}

TEST(IdKindNames, RoundTrip) {
  for (IdKind kind : kKinds) EXPECT_EQ(*parse_id_kind(id_kind_name(kind)), kind);
  auto bad = parse_id_kind("uuid4");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("expected uuid7, ulid or objectid"), std::string::npos);
}

}  // namespace
}  // namespace snowid
