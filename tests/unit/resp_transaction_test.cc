// The MULTI queue of a RESP connection: what it keeps, and its bounds.
#include "resp_transaction.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace snowid::server {
namespace {

using Arguments = std::vector<std::string_view>;

TEST(RespTransactionTest, KeepsCopiesOfTheQueuedCommandsInOrder) {
  RespTransaction transaction(1024);
  {
    std::string incr = "INCR";
    std::string tag = "orders";
    EXPECT_EQ(transaction.queue({incr, tag}, 1), "");
    incr = "XXXX";  // the caller's buffer is reused: the queue holds its own bytes
    tag = "yyyyyy";
  }
  EXPECT_EQ(transaction.queue({"SNOWID.IDS", "5"}, 5), "");
  EXPECT_EQ(transaction.queue({"PING"}, 1), "");
  ASSERT_EQ(transaction.size(), 3u);
  EXPECT_EQ(transaction.command(0), (Arguments{"INCR", "orders"}));
  EXPECT_EQ(transaction.command(1), (Arguments{"SNOWID.IDS", "5"}));
  EXPECT_EQ(transaction.command(2), (Arguments{"PING"}));
  EXPECT_FALSE(transaction.aborted());
}

TEST(RespTransactionTest, QueuedBytesBeyondTheBoundAbortIt) {
  RespTransaction transaction(16);
  EXPECT_EQ(transaction.queue({"INCR", "orders"}, 1), "");  // 10 bytes
  const std::string refusal = transaction.queue({"INCR", "orders"}, 1);
  EXPECT_NE(refusal.find("resp_max_pending_bytes"), std::string::npos) << refusal;
  EXPECT_TRUE(transaction.aborted());
  EXPECT_EQ(transaction.size(), 1u);
}

TEST(RespTransactionTest, IdsBeyondTheBoundAbortIt) {
  RespTransaction transaction(1 << 20);
  EXPECT_EQ(transaction.queue({"SNOWID.IDS", "n"}, kMaxTransactionIds - 1), "");
  EXPECT_EQ(transaction.queue({"INCR", "t"}, 1), "");
  EXPECT_NE(transaction.queue({"INCR", "t"}, 1).find("IDs and numbers"), std::string::npos);
  EXPECT_TRUE(transaction.aborted());
}

TEST(RespTransactionTest, AbortIsKept) {
  RespTransaction transaction(64);
  transaction.abort();
  EXPECT_EQ(transaction.queue({"PING"}, 1), "");
  EXPECT_TRUE(transaction.aborted());
}

}  // namespace
}  // namespace snowid::server
