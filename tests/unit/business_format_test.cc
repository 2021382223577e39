// Business ID templates (include/snowid/ext/business_format.h): what they
// render, what they refuse and why, the no-repeat property, and which
// template changes a tag may make while nodes serve the old one.
#include "snowid/ext/business_format.h"

#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <random>
#include <string>
#include <utility>
#include <vector>

namespace snowid {
namespace {

using std::chrono::milliseconds;
using namespace std::chrono_literals;

// The Unix time of a UTC date and time.
milliseconds utc(int year, unsigned month, unsigned day, std::chrono::seconds time_of_day = 0s) {
  const std::chrono::sys_days date{std::chrono::year{year} / std::chrono::month{month} /
                                   std::chrono::day{day}};
  return std::chrono::duration_cast<milliseconds>(date.time_since_epoch() + time_of_day);
}

BusinessFormat format(std::string_view text, std::string_view zone = "UTC") {
  auto parsed = BusinessFormat::parse(text, zone);
  EXPECT_TRUE(parsed.ok()) << text << ": " << parsed.error().message;
  return std::move(parsed).value();
}

std::string render(const BusinessFormat& business, const CivilTime& at, std::int64_t number) {
  std::string out;
  business.render(at, number, out);
  return out;
}

std::string change_refusal(std::string_view before, std::string_view after) {
  Status status = check_business_template_change(format(before), format(after));
  return status.ok() ? std::string() : status.error().message;
}

constexpr CivilTime kDecember2{2026, 12, 2, 10, 0, 0};

TEST(BusinessFormat, RendersTheTemplatesExample) {
  const BusinessFormat order = format("ORD-{yyyyMMdd}-{seq:06}");
  const CivilTime at = order.civil_time(utc(2026, 12, 2, 10h));
  EXPECT_EQ(render(order, at, 42), "ORD-20261202-000042");
  EXPECT_EQ(order.period(), BusinessPeriod::kDay);
  EXPECT_EQ(order.period_label(at), "20261202");
  EXPECT_EQ(order.seq_width(), 6);
  EXPECT_EQ(order.max_number(), 999'999);
}

TEST(BusinessFormat, RenderAppendsToWhatTheStringHolds) {
  std::string out = "x,";
  format("A{seq}").render(kDecember2, 7, out);
  EXPECT_EQ(out, "x,A7");
}

TEST(BusinessFormat, LuhnCheckDigitMatchesTheStandardVector) {
  EXPECT_EQ(render(format("{seq}{luhn}"), kDecember2, 7992739871), "79927398713");
  EXPECT_EQ(render(format("{yyMM}{seq:08}{luhn}"), kDecember2, 42), "2612000000422");
  // Only digits count: the letters and dashes are skipped.
  EXPECT_EQ(render(format("A-{seq}-{luhn}"), kDecember2, 7992739871), "A-7992739871-3");
}

TEST(BusinessFormat, Mod97CheckDigitsMakeTheNumberOneModulo97) {
  const std::string id = render(format("{seq}{mod97}"), kDecember2, 794);
  EXPECT_EQ(id, "79444");
  EXPECT_EQ(std::stoll(id) % 97, 1);
  EXPECT_EQ(render(format("{seq:02}{mod97}"), kDecember2, 1), "0195");  // 195 = 2 * 97 + 1
}

TEST(BusinessFormat, DatesAreReadInTheFormatsZone) {
  const milliseconds moment = utc(2026, 12, 1, 16h + 30min);
  EXPECT_EQ(format("{yyyyMMdd}{seq}").period_label(format("{yyyyMMdd}{seq}").civil_time(moment)),
            "20261201");
  for (const std::string_view zone : {"Asia/Shanghai", "+08:00"}) {
    const BusinessFormat shanghai = format("{yyyyMMdd}{seq}", zone);
    EXPECT_EQ(shanghai.period_label(shanghai.civil_time(moment)), "20261202") << zone;
  }
  const BusinessFormat india = format("{yyyyMMdd}-{HHmm}-{seq}", "+05:30");
  EXPECT_EQ(render(india, india.civil_time(moment), 1), "20261201-2200-1");
  const BusinessFormat new_york = format("{yyyy-MM-dd HH:mm:ss} {seq}", "-05:00");
  EXPECT_EQ(render(new_york, new_york.civil_time(moment), 1), "2026-12-01 11:30:00 1");
}

TEST(BusinessFormat, CivilTimeFloorsToTheSecondBeforeTheEpochToo) {
  const BusinessFormat business = format("{yyyyMMdd}{HHmmss}{seq}");
  EXPECT_EQ(render(business, business.civil_time(-1ms), 1), "196912312359591");
}

TEST(BusinessFormat, PeriodLabelsAreTheDateDigitsTheTemplateShows) {
  EXPECT_EQ(format("{yyyy}{seq}").period_label(kDecember2), "2026");
  EXPECT_EQ(format("{yyyy}{seq}").period(), BusinessPeriod::kYear);
  EXPECT_EQ(format("{yyyy/MM}/{seq}").period_label(kDecember2), "202612");
  EXPECT_EQ(format("{yyyy/MM}/{seq}").period(), BusinessPeriod::kMonth);
  EXPECT_EQ(format("INV{seq}").period_label(kDecember2), "");
  EXPECT_EQ(format("INV{seq}").period(), BusinessPeriod::kNone);
  // Two year digits: a century later is the same period, so its counter
  // continues instead of restarting and repeating 2026's strings.
  EXPECT_EQ(format("{yyMM}{seq:08}{luhn}").period_label(kDecember2), "2612");
  EXPECT_EQ(format("{yyMM}{seq:08}{luhn}").period_label({2126, 12, 2, 0, 0, 0}), "2612");
}

TEST(BusinessFormat, BracesDoubledAreLiteral) {
  EXPECT_EQ(render(format("{{{seq}}}"), kDecember2, 5), "{5}");
  EXPECT_EQ(render(format("订单-{seq:03}"), kDecember2, 5), "订单-005");
}

TEST(BusinessFormat, MaxNumberIsTheWidestPaddedNumber) {
  EXPECT_EQ(format("{seq:1}").max_number(), 9);
  EXPECT_EQ(format("{seq:18}").max_number(), 999'999'999'999'999'999);
  EXPECT_EQ(format("{seq}").max_number(), std::numeric_limits<std::int64_t>::max());
  EXPECT_EQ(format("{seq}").seq_width(), 0);
  EXPECT_EQ(render(format("{seq}"), kDecember2, std::numeric_limits<std::int64_t>::max()),
            "9223372036854775807");
}

// A template (in a zone) parse() refuses, and a part of its message.
struct Refused {
  std::string text;
  std::string_view zone;
  std::string_view message;
};

void expect_refused(const std::vector<Refused>& cases) {
  for (const Refused& refused : cases) {
    auto parsed = BusinessFormat::parse(refused.text, refused.zone);
    ASSERT_FALSE(parsed.ok()) << refused.text << " in " << refused.zone;
    EXPECT_NE(parsed.error().message.find(refused.message), std::string::npos)
        << refused.text << ": " << parsed.error().message;
  }
}

TEST(BusinessFormat, RefusesMalformedTemplatesNamingTheByte) {
  expect_refused({
      {"A}B{seq}", "UTC", "lone '}' at byte 1"},
      {"{seq}{yyyy", "UTC", "unclosed '{' at byte 5"},
      {"ORD-{yyyyMMdd}", "UTC", "no {seq}"},
      {"{seq}-{seq:04}", "UTC", "ambiguous: a second {seq} at byte 6"},
      {"{seq:19}", "UTC", "width beyond 18 digits"},
      {"{seq:100000}", "UTC", "width beyond 18 digits"},
      {"{seq:0}", "UTC", "width 0"},
      {"{seq:}", "UTC", "width is missing"},
      {"{seq:x6}", "UTC", "not a number"},
      {"{}{seq}", "UTC", "unknown field '' at byte 0"},
  });
}

TEST(BusinessFormat, RefusesUnknownDateFields) {
  expect_refused({
      {"{yyyMMdd}{seq}", "UTC", "unknown field 'yyy'"},
      {"{yyyyMdd}{seq}", "UTC", "unknown field 'M'"},
      {"{yyyyMMddd}{seq}", "UTC", "unknown field 'ddd'"},
      {"{order}{seq}", "UTC", "unknown field 'order' at byte 0"},
      {"{YYYY}{seq}", "UTC", "unknown field 'YYYY'"},
      {"{-}{seq}", "UTC", "unknown field '-'"},
      {"{yyyyMM}{yy}{seq}", "UTC", "the year field 'yy' at byte 8 appears twice"},
      {"{yyyyMMdd}{dd}{seq}", "UTC", "appears twice"},
  });
}

TEST(BusinessFormat, RefusesPeriodsThatRepeat) {
  expect_refused({
      {"{dd}{seq}", "UTC", "ambiguous: dd without MM repeats every month"},
      {"{MMdd}{seq}", "UTC", "repeats every year"},
      {"{MM}{seq}", "UTC", "ambiguous: MM without a year"},
      {"{yyyyMM}{HH}{seq}", "UTC", "HH, mm and ss need dd"},
      {"{ss}{seq}", "UTC", "need dd"},
  });
}

TEST(BusinessFormat, RefusesMisplacedCheckFields) {
  expect_refused({
      {"{luhn}{seq}", "UTC", "{luhn} at byte 0 comes before {seq}"},
      {"{seq}{luhn}{mod97}", "UTC", "a second check field {mod97} at byte 11"},
  });
}

TEST(BusinessFormat, RefusesBadTextLengthAndZone) {
  EXPECT_TRUE(
      BusinessFormat::parse(std::string(kMaxBusinessTemplateBytes - 5, 'A') + "{seq}").ok());
  EXPECT_TRUE(BusinessFormat::parse("{seq}", "-05:30").ok());
  expect_refused({
      {std::string(kMaxBusinessTemplateBytes - 4, 'A') + "{seq}", "UTC",
       "161 bytes, more than 160"},
      {"A\tB{seq}", "UTC", "control character 0x09 at byte 1"},
      {"A\x7f{seq}", "UTC", "control character 0x7f"},
      {"A\xc2\x85{seq}", "UTC", "control character U+0085 at byte 1"},
      {"A\xff{seq}", "UTC", "invalid UTF-8 at byte 1"},
      {"A\xc0\xaf{seq}", "UTC", "invalid UTF-8 at byte 1"},  // overlong '/'
      {"A\xed\xa0\x80{seq}", "UTC", "invalid UTF-8"},        // a surrogate
      {"{seq}", "Mars/Olympus", "unknown time zone 'Mars/Olympus'"},
      {"{seq}", "../etc/passwd", "unknown time zone"},
      {"{seq}", "+25:00", "unknown time zone '+25:00'"},
      {"{seq}", "+08:60", "unknown time zone"},
  });
}

TEST(BusinessFormat, CanRenderReadsItsOwnStringsBackAndNothingElse) {
  const BusinessFormat order = format("ORD-{yyyyMMdd}-{seq:06}{luhn}");
  const std::string id = render(order, kDecember2, 42);
  EXPECT_TRUE(order.can_render(id));
  std::string wrong_check = id;
  wrong_check.back() = wrong_check.back() == '0' ? '1' : '0';
  EXPECT_FALSE(order.can_render(wrong_check));
  EXPECT_FALSE(order.can_render("ORD-20261302-0000420"));  // month 13
  EXPECT_FALSE(order.can_render("ORD-20260230-0000420"));  // February 30
  EXPECT_FALSE(order.can_render("ORD-20261202-0000000"));  // number 0
  EXPECT_FALSE(format("{seq}").can_render("042"));         // unpadded: no leading zero
  EXPECT_FALSE(format("{seq}").can_render("9223372036854775808"));
  // 02:30 on 2026-03-08 never happens in New York (clocks put forward).
  EXPECT_FALSE(format("{yyyyMMddHHmm}{seq}", "America/New_York").can_render("2026030802301"));
  EXPECT_TRUE(format("{yyyyMMddHHmm}{seq}", "America/New_York").can_render("2026030803301"));
}

// The no-repeat invariant: many (label, number) pairs over neighbouring
// periods of each template (and a century later, which a yy template labels
// as the same period); a string that comes again must come from the same
// pair, and each is read back.
TEST(BusinessFormat, DistinctLabelAndNumberPairsRenderDistinctStrings) {
  const std::vector<std::string_view> templates = {"ORD-{yyyyMMdd}-{seq:06}",
                                                   "{yyMM}{seq:08}{luhn}",
                                                   "{seq}{yyMMdd}",
                                                   "{yyyy}{seq}{mod97}",
                                                   "X{seq}",
                                                   "{yyyyMMdd}{HHmm}{seq:03}",
                                                   "{seq:2}{yy}"};
  const std::vector<CivilTime> times = {{2026, 12, 31, 23, 59, 0},
                                        {2027, 1, 1, 0, 0, 1},
                                        {2027, 1, 2, 0, 1, 0},
                                        {2126, 12, 31, 0, 0, 0}};
  for (const std::string_view text : templates) {
    const BusinessFormat business = format(text);
    std::map<std::string, std::pair<std::string, std::int64_t>> pair_of_string;
    std::size_t strings = 0;
    for (const CivilTime& at : times) {
      const std::string label = business.period_label(at);
      for (std::int64_t number = 1; number <= std::min<std::int64_t>(business.max_number(), 3000);
           ++number) {
        const std::string id = render(business, at, number);
        ASSERT_TRUE(business.can_render(id)) << text << ": " << id;
        const auto [where, added] = pair_of_string.try_emplace(id, label, number);
        ASSERT_EQ(where->second, std::make_pair(label, number))
            << text << " renders " << id << " for two pairs";
        strings += added ? 1 : 0;
      }
    }
    EXPECT_GT(strings, 100u) << text;
  }
}

// Random bytes, and random strings of the template alphabet: parse() only
// ever accepts or refuses, and what it accepts renders within its limits.
TEST(BusinessFormat, ArbitraryTemplatesNeverCrashTheParser) {
  std::mt19937_64 random(20261202);
  constexpr std::string_view kAlphabet = "{}{}seq:0123456789yMdHms-/._ luhnmod97ORD\xe8\xae\xa2";
  for (int round = 0; round < 20000; ++round) {
    std::string text(random() % 40, '\0');
    for (char& c : text) {
      c = round % 2 == 0 ? static_cast<char>(random() % 256)
                         : kAlphabet[random() % kAlphabet.size()];
    }
    auto parsed = BusinessFormat::parse(text);
    if (!parsed.ok()) {
      EXPECT_FALSE(parsed.error().message.empty());
      continue;
    }
    for (const std::int64_t number : {std::int64_t{1}, parsed->max_number()}) {
      std::string id;
      parsed->render(kDecember2, number, id);
      EXPECT_LE(id.size(), kMaxBusinessIdBytes);
      EXPECT_TRUE(parsed->can_render(id)) << text << ": " << id;
    }
  }
}

TEST(BusinessTemplateChange, TheSameTemplateInAnotherZoneIsSafe) {
  EXPECT_TRUE(check_business_template_change(format("ORD-{yyyyMMdd}-{seq:06}", "UTC"),
                                             format("ORD-{yyyyMMdd}-{seq:06}", "Asia/Shanghai"))
                  .ok());
}

TEST(BusinessTemplateChange, AnotherSeqWidthOfTheSamePeriodIsSafe) {
  EXPECT_EQ(change_refusal("ORD-{yyyyMMdd}-{seq:06}", "ORD-{yyyyMMdd}-{seq:08}"), "");
  EXPECT_EQ(change_refusal("{yyMM}{seq:08}{luhn}", "{yyMM}{seq}{luhn}"), "");
}

TEST(BusinessTemplateChange, DisjointTemplatesAreSafe) {
  EXPECT_EQ(change_refusal("ORD-{yyyyMMdd}-{seq:06}", "INV-{yyyyMMdd}-{seq:06}"), "");
  EXPECT_EQ(change_refusal("{yyyyMMdd}{seq:06}", "{yyyyMMdd}{seq:07}{luhn}"), "");  // 14 vs 16
  EXPECT_EQ(change_refusal("{seq}-A", "{yyyy}{seq}-B"), "");  // the ends differ
  EXPECT_EQ(change_refusal("A{seq}", "{yyyy}{seq}"), "");     // 'A' cannot be a digit
}

TEST(BusinessTemplateChange, RefusesTemplatesThatCanRenderTheSameString) {
  EXPECT_NE(change_refusal("{yyMMdd}{seq:06}", "{yyMM}{seq:08}")
                .find("'{yyMMdd}{seq:06}' and '{yyMM}{seq:08}' can both render 261202000001"),
            std::string::npos);
  EXPECT_NE(change_refusal("ORD{seq}", "ORD{yyyy}{seq}").find("can both render"),
            std::string::npos);
  // No month is 13, so these never meet, but the rule does not read dates:
  // refused as unproven, not as repeating.
  EXPECT_NE(change_refusal("{yyyyMM}{seq:02}", "{yyyy}13{seq:02}").find("cannot prove that"),
            std::string::npos);
  // A width change that also changes the period is no width change.
  EXPECT_NE(change_refusal("{yyyyMM}{seq:06}", "{yyyyMMdd}{seq:04}").find("can both render"),
            std::string::npos);
}

}  // namespace
}  // namespace snowid
