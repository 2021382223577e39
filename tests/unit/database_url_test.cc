// Reading a database URL's authority (src/common/database_url.h): where the
// user info, its password and the host are, as libpq and the MySQL store
// read them.
#include "database_url.h"

#include <gtest/gtest.h>

#include <string_view>

namespace snowid {
namespace {

TEST(DatabaseUrlAuthority, NeedsAScheme) {
  EXPECT_EQ(database_url_authority("user@host/db"), std::nullopt);
}

TEST(DatabaseUrlAuthority, FindsUserInfoHostAndPath) {
  constexpr std::string_view url = "postgresql://u:p@db.example:5432/ids?sslmode=require";
  const auto parts = database_url_authority(url);
  ASSERT_TRUE(parts);
  EXPECT_EQ(url.substr(parts->begin, parts->end - parts->begin), "u:p@db.example:5432");
  ASSERT_TRUE(parts->has_user_info());
  ASSERT_TRUE(parts->has_path());
  EXPECT_EQ(url[parts->path_slash], '/');
  EXPECT_EQ(parts->end, parts->path_slash);
  EXPECT_EQ(parts->first_at, parts->last_at);
  EXPECT_EQ(url.substr(parts->libpq_host(), parts->end - parts->libpq_host()), "db.example:5432");
}

TEST(DatabaseUrlAuthority, WithoutUserInfoOrPath) {
  constexpr std::string_view url = "mysql://host:3306";
  const auto parts = database_url_authority(url);
  ASSERT_TRUE(parts);
  EXPECT_FALSE(parts->has_user_info());
  EXPECT_FALSE(parts->has_path());
  EXPECT_EQ(parts->end, url.size());
  EXPECT_EQ(parts->libpq_host(), parts->begin);
}

TEST(DatabaseUrlAuthority, TheAuthorityEndsAtTheFirstSlashOnly) {
  // A '?' or '#' before the '@' is part of the password; an '@' after the
  // first '/' is not part of the authority.
  constexpr std::string_view url = "postgres://u:pa?s#s@host/db?x=a@b";
  const auto parts = database_url_authority(url);
  ASSERT_TRUE(parts);
  EXPECT_EQ(url.substr(parts->begin, parts->last_at - parts->begin), "u:pa?s#s");
  EXPECT_EQ(url.substr(parts->end), "/db?x=a@b");
}

TEST(DatabaseUrlAuthority, UserInfoEndsAtTheLastAtAndLibpqsHostAfterTheFirst) {
  constexpr std::string_view url = "postgres://u:p@ss@host/db";
  const auto parts = database_url_authority(url);
  ASSERT_TRUE(parts);
  EXPECT_EQ(url.substr(parts->begin, parts->last_at - parts->begin), "u:p@ss");
  EXPECT_EQ(url.substr(parts->libpq_host(), parts->end - parts->libpq_host()), "ss@host");
}

}  // namespace
}  // namespace snowid
