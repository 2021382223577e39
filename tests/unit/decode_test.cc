// decode/compose, ID parsing and time formatting.
#include "snowid/decode.h"

#include <gtest/gtest.h>

#include <random>

#include "time_text.h"

namespace snowid {
namespace {

using std::chrono::milliseconds;

TEST(Decode, KnownAnswerTwitter) {
  const Layout twitter = *preset("twitter");
  const IdFields fields{milliseconds{1505914988849}, 17, 25, 0};
  auto id = compose(twitter, fields);
  ASSERT_TRUE(id.ok());
  EXPECT_EQ(*id, 910499571847892992);
  auto back = decode(twitter, 910499571847892992);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(*back, fields);
}

TEST(Decode, RefusesNegativeAndOversizedIds) {
  const Layout js = *preset("js-safe");
  EXPECT_FALSE(decode(js, -1).ok());
  EXPECT_FALSE(decode(js, std::int64_t{1} << 53).ok());
  EXPECT_TRUE(decode(js, (std::int64_t{1} << 53) - 1).ok());
}

TEST(Decode, ComposeNamesTheFieldOutOfRange) {
  const Layout twitter{};
  auto id = compose(twitter, IdFields{milliseconds{1505914988849}, 32, 0, 0});
  ASSERT_FALSE(id.ok());
  EXPECT_NE(id.error().message.find("datacenter 32 is out of range 0..31"), std::string::npos);
  EXPECT_FALSE(compose(twitter, IdFields{milliseconds{1505914988849}, 0, 0, 4096}).ok());
  EXPECT_FALSE(compose(twitter, IdFields{milliseconds{1}, 0, 0, 0}).ok());  // before epoch
  EXPECT_FALSE(compose(twitter, IdFields{twitter.epoch + milliseconds{1LL << 41}, 0, 0, 0}).ok());
}

// Property: for random valid layouts and random in-range fields,
// decode(compose(fields)) == fields (timestamps truncated to the unit).
TEST(Decode, RoundTripOverRandomLayouts) {
  std::mt19937_64 rng(20261121);
  auto pick = [&](int low, int high) {
    return std::uniform_int_distribution<int>(low, high)(rng);
  };
  for (int round = 0; round < 20000; ++round) {
    Layout layout;
    layout.timestamp_bits = pick(1, 50);
    layout.sequence_bits = pick(1, 63 - layout.timestamp_bits);
    const int rest = 63 - layout.timestamp_bits - layout.sequence_bits;
    layout.datacenter_bits = pick(0, rest);
    layout.worker_bits = pick(0, rest - layout.datacenter_bits);
    layout.time_unit = milliseconds{pick(0, 3) == 0 ? pick(1, 100000) : 1};
    layout.epoch = milliseconds{std::uniform_int_distribution<long long>(0, 1LL << 41)(rng)};
    layout.sequence_position = pick(0, 1) == 0 ? SequencePosition::kLow : SequencePosition::kHigh;
    if (!validate(layout).ok()) continue;
    auto value_below = [&](int bits) {
      return std::uniform_int_distribution<std::uint64_t>(0, (std::uint64_t{1} << bits) - 1)(rng);
    };
    const auto units = static_cast<long long>(value_below(layout.timestamp_bits));
    IdFields fields{layout.epoch + layout.time_unit * units, value_below(layout.datacenter_bits),
                    value_below(layout.worker_bits), value_below(layout.sequence_bits)};
    auto id = compose(layout, fields);
    ASSERT_TRUE(id.ok()) << describe(layout) << ": " << id.error().message;
    ASSERT_GE(*id, 0);
    auto back = decode(layout, *id);
    ASSERT_TRUE(back.ok());
    ASSERT_EQ(*back, fields) << describe(layout);
  }
}

TEST(Decode, SequenceHighOrdersBySequenceBeforeNode) {
  const Layout sony = *preset("sonyflake");
  const auto t = sony.epoch + milliseconds{1000};
  const Id a = *compose(sony, IdFields{t, 0, 65535, 0});
  const Id b = *compose(sony, IdFields{t, 0, 0, 1});
  EXPECT_LT(a, b);
}

TEST(ParseId, AcceptsTheFullRange) {
  EXPECT_EQ(*parse_id("0"), 0);
  EXPECT_EQ(*parse_id("910499571847892992"), 910499571847892992);
  EXPECT_EQ(*parse_id("9223372036854775807"), std::numeric_limits<std::int64_t>::max());
}

TEST(ParseId, RefusesBadInputWithAReason) {
  struct Case {
    const char* text;
    const char* says;
  };
  for (const Case& c : {Case{"", "empty"}, Case{"abc", "not a decimal number"},
                        Case{"-5", "negative"}, Case{"12x", "not a decimal number"},
                        Case{" 12", "not a decimal number"}, Case{"+12", "not a decimal number"},
                        Case{"9223372036854775808", "2^63-1"},
                        Case{"18446744073709551616", "2^63-1"},
                        Case{"99999999999999999999999999", "2^63-1"}}) {
    auto id = parse_id(c.text);
    ASSERT_FALSE(id.ok()) << c.text;
    EXPECT_NE(id.error().message.find(c.says), std::string::npos)
        << c.text << " -> " << id.error().message;
  }
}

TEST(Time, FormatsIso8601WithMilliseconds) {
  EXPECT_EQ(format_time(milliseconds{1505914988849}), "2017-09-20T13:43:08.849Z");
  EXPECT_EQ(format_time(milliseconds{0}), "1970-01-01T00:00:00.000Z");
}

TEST(Time, ParsesIso8601AndUnixMilliseconds) {
  EXPECT_EQ(*parse_time("2014-09-01T00:00:00Z"), milliseconds{1409529600000});
  EXPECT_EQ(*parse_time("2014-09-01"), milliseconds{1409529600000});
  EXPECT_EQ(*parse_time("2017-09-20T13:43:08.849Z"), milliseconds{1505914988849});
  EXPECT_EQ(*parse_time("2017-09-20T15:43:08.849+02:00"), milliseconds{1505914988849});
  EXPECT_EQ(*parse_time("1288834974657"), milliseconds{1288834974657});
  for (const char* bad : {"2014-13-01", "2014-02-30", "yesterday", "2014-09-01T25:00:00Z",
                          "2014-09-01T00:00:00Zjunk", "2014-9-1", ""}) {
    EXPECT_FALSE(parse_time(bad).ok()) << bad;
  }
}

}  // namespace
}  // namespace snowid
