// Layout presets, validation and derived facts.
#include "snowid/layout.h"

#include <gtest/gtest.h>

#include "time_text.h"

namespace snowid {
namespace {

using std::chrono::milliseconds;

constexpr milliseconds kNow{1'790'000'000'000};  // 2026-09-21

TEST(Layout, DefaultIsTwitter) {
  Layout twitter = *preset("twitter");
  EXPECT_EQ(twitter, Layout{});
  EXPECT_EQ(twitter.timestamp_bits, 41);
  EXPECT_EQ(twitter.datacenter_bits, 5);
  EXPECT_EQ(twitter.worker_bits, 5);
  EXPECT_EQ(twitter.sequence_bits, 12);
  EXPECT_EQ(twitter.epoch, milliseconds{1288834974657});
  EXPECT_TRUE(validate(twitter).ok());
}

TEST(Layout, EveryPresetIsValid) {
  for (auto name : preset_names()) {
    auto layout = preset(name);
    ASSERT_TRUE(layout.ok()) << name;
    EXPECT_TRUE(validate(*layout).ok()) << name;
  }
}

TEST(Layout, SonyflakePutsSequenceAboveMachineId) {
  Layout sony = *preset("sonyflake");
  EXPECT_EQ(sony.timestamp_bits, 39);
  EXPECT_EQ(sony.sequence_bits, 8);
  EXPECT_EQ(sony.datacenter_bits + sony.worker_bits, 16);
  EXPECT_EQ(sony.time_unit, milliseconds{10});
  EXPECT_EQ(sony.epoch, milliseconds{1409529600000});
  EXPECT_EQ(sony.sequence_position, SequencePosition::kHigh);
}

TEST(Layout, BaiduDefaultRanOutInNovember2024) {
  const LayoutFacts facts = layout_facts(*preset("baidu"), kNow);
  EXPECT_EQ(format_time(facts.overflow_at).substr(0, 10), "2024-11-20");
  ASSERT_TRUE(facts.warning.has_value());
  EXPECT_NE(facts.warning->find("overflowed"), std::string::npos);
}

TEST(Layout, JsSafeIdsStayBelowTwoToThe53) {
  const LayoutFacts facts = layout_facts(*preset("js-safe"), kNow);
  EXPECT_EQ(facts.total_bits, 53);
  EXPECT_EQ(facts.max_id, (std::int64_t{1} << 53) - 1);
  EXPECT_FALSE(facts.warning.has_value());
  EXPECT_GT(facts.overflow_at, kNow + milliseconds{60LL * 365 * 86'400'000});
}

TEST(Layout, UnknownPresetListsKnownOnes) {
  auto layout = preset("flake");
  ASSERT_FALSE(layout.ok());
  EXPECT_NE(layout.error().message.find("twitter"), std::string::npos);
}

TEST(Layout, RefusesMoreThan63BitsNamingTheTotal) {
  Layout layout{37, 0, 20, 16};
  Status s = validate(layout);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().code, ErrorCode::kInvalidArgument);
  EXPECT_NE(s.error().message.find("73 bits"), std::string::npos) << s.error().message;
}

TEST(Layout, RefusesFieldsOutOfRange) {
  EXPECT_FALSE(validate(Layout{0, 5, 5, 12}).ok());   // no timestamp
  EXPECT_FALSE(validate(Layout{41, 5, 5, 0}).ok());   // no sequence
  EXPECT_FALSE(validate(Layout{41, -1, 5, 12}).ok());
  EXPECT_TRUE(validate(Layout{41, 0, 0, 22}).ok());   // node fields may be empty
  Layout unit = Layout{};
  unit.time_unit = milliseconds{0};
  EXPECT_FALSE(validate(unit).ok());
  Layout epoch = Layout{};
  epoch.epoch = milliseconds{-1};
  EXPECT_FALSE(validate(epoch).ok());
  Layout forever{62, 0, 0, 1, milliseconds{1000}};
  EXPECT_FALSE(validate(forever).ok());
}

TEST(Layout, DerivedFactsOfTwitter) {
  const LayoutFacts facts = layout_facts(Layout{}, kNow);
  EXPECT_EQ(facts.total_bits, 63);
  EXPECT_EQ(facts.max_datacenter_id, 31u);
  EXPECT_EQ(facts.max_worker_id, 31u);
  EXPECT_EQ(facts.ids_per_unit, 4096u);
  EXPECT_DOUBLE_EQ(facts.ids_per_second, 4'096'000.0);
  EXPECT_EQ(facts.overflow_at, milliseconds{1288834974657 + (1LL << 41)});
  EXPECT_FALSE(facts.warning.has_value());
}

TEST(Layout, WarnsWhenOverflowIsLessThanFiveYearsAway) {
  Layout layout{};
  // 2^41 ms is about 69.7 years; an epoch 67 years back leaves under 3.
  layout.epoch = kNow - milliseconds{67LL * 365 * 86'400'000};
  const LayoutFacts facts = layout_facts(layout, kNow);
  ASSERT_TRUE(facts.warning.has_value());
  EXPECT_NE(facts.warning->find("overflows on"), std::string::npos);
}

TEST(Layout, ResolveAppliesOverridesAndValidates) {
  LayoutSpec spec;
  spec.preset = "discord";
  spec.sequence_bits = 10;
  auto layout = resolve(spec);
  ASSERT_TRUE(layout.ok());
  EXPECT_EQ(layout->sequence_bits, 10);
  EXPECT_EQ(layout->epoch, milliseconds{1420070400000});
  spec.timestamp_bits = 50;
  EXPECT_FALSE(resolve(spec).ok());
}

TEST(Layout, DescribeDistinguishesLayouts) {
  EXPECT_EQ(describe(Layout{}), "41/5/5/12 unit=1ms epoch=2010-11-04T01:42:54.657Z seq=low");
  EXPECT_NE(describe(*preset("twitter")), describe(*preset("discord")));
}

}  // namespace
}  // namespace snowid
