// Text encodings of IDs: round trips over [0, 2^63), fixed widths, sort
// order, and refusals.
#include "snowid/id_encoding.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <random>
#include <vector>

namespace snowid {
namespace {

constexpr Id kMaxId = std::numeric_limits<Id>::max();
constexpr IdEncoding kAll[] = {IdEncoding::kDecimal, IdEncoding::kHex, IdEncoding::kBase32,
                               IdEncoding::kBase58, IdEncoding::kBase62};
constexpr IdEncoding kFixed[] = {IdEncoding::kHex, IdEncoding::kBase32, IdEncoding::kBase58,
                                 IdEncoding::kBase62};

std::vector<Id> sample() {
  std::vector<Id> ids = {0, 1, 2, 57, 58, 61, 62, 63, 255, 256, kMaxId - 1, kMaxId};
  for (int bit = 0; bit < 63; ++bit) {
    ids.push_back(Id{1} << bit);
    ids.push_back((Id{1} << bit) - 1);
  }
  std::mt19937_64 random(63);
  std::uniform_int_distribution<Id> any(0, kMaxId);
  for (int i = 0; i < 1'000'000; ++i) ids.push_back(any(random));
  return ids;
}

TEST(IdEncodingTest, NamesRoundTrip) {
  for (IdEncoding encoding : kAll) {
    auto parsed = parse_id_encoding(id_encoding_name(encoding));
    ASSERT_TRUE(parsed.ok());
    EXPECT_EQ(*parsed, encoding);
  }
  auto unknown = parse_id_encoding("base64");
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.error().message.find("base58"), std::string::npos);
}

TEST(IdEncodingTest, EveryValueRoundTripsAtItsFixedWidth) {
  const std::vector<Id> ids = sample();
  for (IdEncoding encoding : kAll) {
    for (Id id : ids) {
      const std::string text = encode_id(id, encoding);
      if (encoding != IdEncoding::kDecimal) {
        ASSERT_EQ(text.size(), encoded_id_width(encoding)) << id_encoding_name(encoding);
      }
      auto back = decode_id(text, encoding);
      ASSERT_TRUE(back.ok()) << id_encoding_name(encoding) << " " << text << ": "
                             << back.error().message;
      ASSERT_EQ(*back, id) << id_encoding_name(encoding) << " " << text;
    }
  }
}

TEST(IdEncodingTest, KnownTexts) {
  EXPECT_EQ(encode_id(0, IdEncoding::kHex), "0000000000000000");
  EXPECT_EQ(encode_id(kMaxId, IdEncoding::kHex), "7fffffffffffffff");
  EXPECT_EQ(encode_id(0, IdEncoding::kBase32), "0000000000000");
  EXPECT_EQ(encode_id(kMaxId, IdEncoding::kBase32), "7ZZZZZZZZZZZZ");
  EXPECT_EQ(encode_id(0, IdEncoding::kBase58), "11111111111");
  EXPECT_EQ(encode_id(57, IdEncoding::kBase58), "1111111111z");
  EXPECT_EQ(encode_id(58, IdEncoding::kBase58), "11111111121");
  EXPECT_EQ(encode_id(0, IdEncoding::kBase62), "00000000000");
  EXPECT_EQ(encode_id(61, IdEncoding::kBase62), "0000000000z");
  EXPECT_EQ(encode_id(kMaxId, IdEncoding::kBase62), "AzL8n0Y58m7");
  EXPECT_EQ(encode_id(kMaxId, IdEncoding::kBase58), "NQm6nKp8qFC");
  EXPECT_EQ(encode_id(kMaxId, IdEncoding::kDecimal), "9223372036854775807");
}

TEST(IdEncodingTest, FixedWidthTextsSortAsTheirValues) {
  std::vector<Id> ids = sample();
  std::sort(ids.begin(), ids.end());
  for (IdEncoding encoding : kFixed) {
    std::string previous;
    for (std::size_t i = 0; i < ids.size(); ++i) {
      std::string text = encode_id(ids[i], encoding);
      if (i > 0 && ids[i] != ids[i - 1]) {
        ASSERT_LT(previous, text) << id_encoding_name(encoding) << " " << ids[i - 1] << " < "
                                  << ids[i];
      }
      previous = std::move(text);
    }
  }
  // Decimal does not: 9 < 10 as numbers, "9" > "10" as text.
  EXPECT_GT(encode_id(9, IdEncoding::kDecimal), encode_id(10, IdEncoding::kDecimal));
}

TEST(IdEncodingTest, ReadsEitherCaseWhereTheAlphabetAllows) {
  EXPECT_EQ(*decode_id("7FFFFFFFFFFFFFFF", IdEncoding::kHex), kMaxId);
  EXPECT_EQ(*decode_id("7zzzzzzzzzzzz", IdEncoding::kBase32), kMaxId);
  // Crockford: I and L read as 1, O as 0.
  EXPECT_EQ(*decode_id("000000000000I", IdEncoding::kBase32), 1);
  EXPECT_EQ(*decode_id("000000000000l", IdEncoding::kBase32), 1);
  EXPECT_EQ(*decode_id("OOOOOOOOOOOO0", IdEncoding::kBase32), 0);
}

TEST(IdEncodingTest, RefusesBadText) {
  struct Case {
    std::string_view text;
    IdEncoding encoding;
    std::string_view reason;
  };
  const Case cases[] = {
      {"8000000000000000", IdEncoding::kHex, "exceeds 2^63-1"},
      {"ffffffffffffffff", IdEncoding::kHex, "exceeds 2^63-1"},
      {"7ffffffffffffff", IdEncoding::kHex, "expected 16"},
      {"7fffffffffffffff0", IdEncoding::kHex, "expected 16"},
      {"7ffffffffffffffg", IdEncoding::kHex, "not a hex digit"},
      {"8000000000000", IdEncoding::kBase32, "exceeds 2^63-1"},
      {"000000000000U", IdEncoding::kBase32, "not a base32 digit"},
      {"0000000000000", IdEncoding::kBase58, "expected 11"},
      {"1111111111l", IdEncoding::kBase58, "not a base58 digit"},
      {"111111111110", IdEncoding::kBase58, "expected 11"},
      {"zzzzzzzzzzz", IdEncoding::kBase58, "exceeds 2^63-1"},
      {"AzL8n0Y58m8", IdEncoding::kBase62, "exceeds 2^63-1"},
      {"0000000000-", IdEncoding::kBase62, "not a base62 digit"},
      {"", IdEncoding::kBase62, "expected 11"},
      {"9223372036854775808", IdEncoding::kDecimal, "exceeds 2^63-1"},
      {"12a", IdEncoding::kDecimal, ""},
  };
  for (const Case& c : cases) {
    auto decoded = decode_id(c.text, c.encoding);
    ASSERT_FALSE(decoded.ok()) << c.text;
    EXPECT_NE(decoded.error().message.find(c.reason), std::string::npos)
        << c.text << ": " << decoded.error().message;
  }
}

}  // namespace
}  // namespace snowid
