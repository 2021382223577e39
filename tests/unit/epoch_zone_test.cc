// Epochs read in a time zone of the system's tz database
// (src/common/epoch_zone.h) and the zone-less time text they apply to.
#include "epoch_zone.h"

#include <gtest/gtest.h>

#include "time_text.h"

namespace snowid {
namespace {

using std::chrono::milliseconds;

milliseconds at(std::string_view text) { return *parse_time(text); }

TEST(EpochZone, AWallClockReadingNamesItsZonesMoment) {
  // Baidu's epochStr on a JVM in China: 8 hours before midnight UTC.
  EXPECT_EQ(*wall_time_in_zone(at("2016-05-20"), "Asia/Shanghai"), at("2016-05-19T16:00:00Z"));
  EXPECT_EQ(*wall_time_in_zone(at("2016-05-20T00:00:00.250"), "America/New_York"),
            at("2016-05-20T04:00:00.250Z"));  // EDT, with the milliseconds kept
  EXPECT_EQ(*wall_time_in_zone(at("2016-01-20"), "America/New_York"),
            at("2016-01-20T05:00:00Z"));  // EST
  EXPECT_EQ(*wall_time_in_zone(at("2016-05-20"), "UTC"), at("2016-05-20"));
}

// As java.util.Calendar: a skipped reading takes the offset before the
// change, a repeated one the later moment (standard time).
TEST(EpochZone, SkippedAndRepeatedReadingsResolveAsJavaCalendarDoes) {
  // New York, 2016-03-13: 02:00 EST jumps to 03:00 EDT; 02:30 never happens.
  EXPECT_EQ(*wall_time_in_zone(at("2016-03-13T02:30:00"), "America/New_York"),
            at("2016-03-13T07:30:00Z"));
  // 2016-11-06: 02:00 EDT falls back to 01:00 EST; 01:30 happens twice.
  EXPECT_EQ(*wall_time_in_zone(at("2016-11-06T01:30:00"), "America/New_York"),
            at("2016-11-06T06:30:00Z"));
}

TEST(EpochZone, UnknownZonesAndPathsAreRefused) {
  for (std::string_view zone :
       {"Mars/Olympus_Mons", "", "/etc/localtime", "../zoneinfo/UTC", "Asia/Shanghai\n"}) {
    auto moment = wall_time_in_zone(at("2016-05-20"), zone);
    ASSERT_FALSE(moment.ok()) << zone;
    EXPECT_EQ(moment.error().code, ErrorCode::kInvalidArgument);
    EXPECT_NE(moment.error().message.find("unknown time zone"), std::string::npos);
  }
}

TEST(EpochZone, MovesThePresetsEpochOrAZonelessOneAndRefusesAZonedOne) {
  LayoutSpec baidu;
  baidu.preset = "baidu";
  ASSERT_TRUE(apply_epoch_zone(baidu, "Asia/Shanghai", false).ok());
  EXPECT_EQ(baidu.epoch, at("2016-05-19T16:00:00Z"));

  LayoutSpec own;
  own.epoch = at("2020-01-01");
  ASSERT_TRUE(apply_epoch_zone(own, "Europe/Berlin", false).ok());
  EXPECT_EQ(own.epoch, at("2019-12-31T23:00:00Z"));

  LayoutSpec zoned;
  zoned.epoch = at("2020-01-01T00:00:00Z");
  EXPECT_TRUE(apply_epoch_zone(zoned, "UTC", true).ok());
  EXPECT_EQ(zoned.epoch, at("2020-01-01"));
  Status refused = apply_epoch_zone(zoned, "Asia/Shanghai", true);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message.find("names its own zone"), std::string::npos);

  LayoutSpec plain;
  ASSERT_TRUE(apply_epoch_zone(plain, "UTC", false).ok());
  EXPECT_FALSE(plain.epoch.has_value());
}

TEST(TimeText, NamesItsZoneOnlyWithUnixMsZOrAnOffset) {
  for (std::string_view text : {"1463702400000", "2016-05-20T00:00:00Z", "2016-05-20T00:00+08:00",
                                "2016-05-20 00:00:00.000-05:00"}) {
    EXPECT_TRUE(time_text_names_zone(text)) << text;
  }
  for (std::string_view text : {"2016-05-20", "2016-05-20T00:00", "2016-05-20 00:00:00.123"}) {
    EXPECT_FALSE(time_text_names_zone(text)) << text;
  }
  EXPECT_EQ(format_wall_time(at("2016-05-20")), "2016-05-20T00:00:00.000");
  EXPECT_FALSE(time_text_names_zone(format_wall_time(at("2016-05-20"))));
  EXPECT_EQ(at(format_wall_time(at("2016-05-20T01:02:03.456Z"))), at("2016-05-20T01:02:03.456Z"));
}

}  // namespace
}  // namespace snowid
