// The one percent-decoder (src/common/percent_decode.h): strict for HTTP
// queries and the MySQL store's URL, lenient as libpq reads parameter names.
#include "percent_decode.h"

#include <gtest/gtest.h>

namespace snowid {
namespace {

TEST(PercentDecode, DecodesEscapesOfEitherCaseAndKeepsOtherBytes) {
  EXPECT_EQ(percent_decode("a%2Fb%2fc+d"), std::optional<std::string>("a/b/c+d"));
  EXPECT_EQ(percent_decode(""), std::optional<std::string>(""));
  EXPECT_EQ(percent_decode("%00"), std::optional<std::string>(std::string(1, '\0')));
  EXPECT_EQ(percent_decode("%ff"), std::optional<std::string>("\xff"));
}

TEST(PercentDecode, RefusesAPercentWithoutTwoHexDigits) {
  for (const char *bad : {"%", "%4", "a%", "%4g", "%g4", "%-1", "%+1", "100%", "%%41"}) {
    EXPECT_EQ(percent_decode(bad), std::nullopt) << bad;
  }
}

TEST(PercentDecodeLenient, DecodesWellFormedEscapesAndKeepsTheRest) {
  EXPECT_EQ(percent_decode_lenient("pass%77ord"), "password");
  EXPECT_EQ(percent_decode_lenient("100%"), "100%");
  EXPECT_EQ(percent_decode_lenient("%4g%41"), "%4gA");
  EXPECT_EQ(percent_decode_lenient("%%41"), "%A");
  EXPECT_EQ(percent_decode_lenient(""), "");
}

}  // namespace
}  // namespace snowid
