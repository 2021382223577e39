// snowidd's configuration helpers that need no running server.
#include <gtest/gtest.h>

#include "config.h"

namespace snowid::server {
namespace {

TEST(RedactStoreUrl, HidesTheUserInfoPassword) {
  EXPECT_EQ(redact_store_url("postgresql://snowid:secret@db:5432/ids?sslmode=require"),
            "postgresql://snowid:***@db:5432/ids?sslmode=require");
  EXPECT_EQ(redact_store_url("postgres://u:p@[::1]/db"), "postgres://u:***@[::1]/db");
}

// libpq ends the user info at the first '/', not at '?' or '#': found by
// fuzz_config (tests/fuzz/corpus/config/crash-redact-question-mark-in-userinfo).
TEST(RedactStoreUrl, HidesAUserInfoPasswordAfterAQuestionMarkOrAHash) {
  EXPECT_EQ(redact_store_url("postgresql://u:pa?ss@h/db"), "postgresql://u:***@h/db");
  EXPECT_EQ(redact_store_url("postgresql://u:pa#ss@h/db"), "postgresql://u:***@h/db");
  EXPECT_EQ(redact_store_url("postgresql://s?owid:secret@db/ids"),
            "postgresql://s?owid:***@db/ids");
  EXPECT_EQ(redact_store_url("postgres://?:e@"), "postgres://?:***@");
}

TEST(RedactStoreUrl, HidesThePasswordParameter) {
  EXPECT_EQ(redact_store_url("postgresql://snowid@db/ids?sslmode=require&password=secret"),
            "postgresql://snowid@db/ids?sslmode=require&password=***");
}

// The query starts at the first '?' after the user info (libpq), not at one
// inside it.
TEST(RedactStoreUrl, HidesThePasswordParameterAfterAQuestionMarkInTheUserInfo) {
  EXPECT_EQ(redact_store_url("postgresql://s?owid@db/ids?password=secret"),
            "postgresql://s?owid@db/ids?password=***");
  EXPECT_EQ(redact_store_url("postgresql://u?:pw@db/ids?password=secret"),
            "postgresql://u?:***@db/ids?password=***");
  EXPECT_EQ(redact_store_url("postgresql://u@db?password=x@y/ids"),
            "postgresql://u@db?password=***");
}

// libpq decodes %XX in parameter names.
TEST(RedactStoreUrl, HidesAPasswordParameterWithAPercentEncodedName) {
  EXPECT_EQ(redact_store_url("postgresql://u@h/db?pass%77ord=secret"),
            "postgresql://u@h/db?pass%77ord=***");
  EXPECT_EQ(redact_store_url("postgresql://u@h/db?sslmode=require&%70%61%73%73word=secret"),
            "postgresql://u@h/db?sslmode=require&%70%61%73%73word=***");
  EXPECT_EQ(redact_store_url("postgresql://u@h/db?pass%7word=x"),
            "postgresql://u@h/db?pass%7word=x");
}

TEST(RedactStoreUrl, LeavesUrlsWithoutAPasswordAlone) {
  for (const char* url : {"sqlite:///var/lib/snowid/segments.db", "sqlite://.snowid/segments.db",
                          "postgresql://snowid@db:5432/ids", "postgresql:///ids?host=/run/pg"}) {
    EXPECT_EQ(redact_store_url(url), url);
  }
}

}  // namespace
}  // namespace snowid::server
