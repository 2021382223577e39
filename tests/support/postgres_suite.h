// A GoogleTest fixture whose suite shares one throw-away PostgreSQL cluster
// (PostgresProcess): made before the suite's first test, removed after its
// last. A test is skipped, saying why, if PostgreSQL 15 is not installed (and
// fails under CI: missing.h).
#pragma once

#include <gtest/gtest.h>

#include "missing.h"
#include "postgres_process.h"

namespace snowid::test {

class PostgresSuite : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (PostgresProcess::available()) postgres_ = new PostgresProcess();
  }
  static void TearDownTestSuite() {
    delete postgres_;
    postgres_ = nullptr;
  }
  void SetUp() override {
    if (postgres_ == nullptr) SNOWID_SKIP_MISSING(PostgresProcess::kMissing);
    ASSERT_TRUE(postgres_->started()) << postgres_->error();
  }

  static inline PostgresProcess* postgres_ = nullptr;
};

}  // namespace snowid::test
