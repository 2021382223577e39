// The MULTI queue of a RESP connection: what it keeps, and its bounds.
#include "resp_transaction.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

namespace snowid::server {
namespace {

using Arguments = std::vector<std::string_view>;

// Bookkeeping of one queued command of `arguments` arguments.
constexpr std::uint64_t overhead(std::uint64_t arguments) {
  return RespTransaction::kQueuedCommandBytes + arguments * RespTransaction::kQueuedArgumentBytes;
}

TEST(RespTransactionTest, KeepsCopiesOfTheQueuedCommandsInOrder) {
  RespQueues queues(1 << 20);
  RespTransaction transaction({1024, 100}, queues);
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
  EXPECT_EQ(queues.commands(), 3u);
  EXPECT_EQ(queues.bytes(), 10 + 11 + 4 + overhead(2) + overhead(2) + overhead(1));
}

TEST(RespTransactionTest, QueuedBytesBeyondTheBoundAbortIt) {
  RespQueues queues(1 << 20);
  RespTransaction transaction({10 + overhead(2) + 5, 100}, queues);
  EXPECT_EQ(transaction.queue({"INCR", "orders"}, 1), "");
  const std::string refusal = transaction.queue({"INCR", "orders"}, 1);
  EXPECT_EQ(refusal.rfind("ERR ", 0), 0u) << refusal;
  EXPECT_NE(refusal.find("resp_max_pending_bytes"), std::string::npos) << refusal;
  EXPECT_TRUE(transaction.aborted());
  // An aborted transaction keeps nothing: its queue is given back at once.
  EXPECT_EQ(transaction.size(), 0u);
  EXPECT_EQ(queues.bytes(), 0u);
  EXPECT_EQ(queues.refusals(RespQueueBound::kBytes), 1u);
}

TEST(RespTransactionTest, CommandsBeyondTheBoundAbortIt) {
  RespQueues queues(1 << 20);
  RespTransaction transaction({1 << 20, 3}, queues);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(transaction.queue({"SNOWID.ID"}, 1), "");
  const std::string refusal = transaction.queue({"SNOWID.ID"}, 1);
  EXPECT_EQ(refusal.rfind("ERR ", 0), 0u) << refusal;
  EXPECT_NE(refusal.find("resp_max_queued_commands (3)"), std::string::npos) << refusal;
  EXPECT_TRUE(transaction.aborted());
  EXPECT_EQ(queues.commands(), 0u);
  EXPECT_EQ(queues.refusals(RespQueueBound::kCommands), 1u);
}

TEST(RespTransactionTest, IdsBeyondTheBoundAbortIt) {
  RespQueues queues(1 << 20);
  RespTransaction transaction({1 << 20, 100}, queues);
  EXPECT_EQ(transaction.queue({"SNOWID.IDS", "n"}, kMaxTransactionIds - 1), "");
  EXPECT_EQ(transaction.queue({"INCR", "t"}, 1), "");
  EXPECT_NE(transaction.queue({"INCR", "t"}, 1).find("IDs and numbers"), std::string::npos);
  EXPECT_TRUE(transaction.aborted());
  EXPECT_EQ(queues.refusals(RespQueueBound::kIds), 1u);
}

// All transactions together hold at most the queues' bound: one that would
// pass it is refused and aborted, the others keep what they queued, and
// what a transaction held is given back when it ends.
TEST(RespTransactionTest, AllQueuesTogetherStayWithinTheirBound) {
  const std::uint64_t one = 9 + overhead(1);  // SNOWID.ID
  RespQueues queues(3 * one);
  auto first = std::make_unique<RespTransaction>(RespTransactionLimits{1 << 20, 100}, queues);
  RespTransaction second({1 << 20, 100}, queues);
  EXPECT_EQ(first->queue({"SNOWID.ID"}, 1), "");
  EXPECT_EQ(first->queue({"SNOWID.ID"}, 1), "");
  EXPECT_EQ(second.queue({"SNOWID.ID"}, 1), "");
  const std::string refusal = second.queue({"SNOWID.ID"}, 1);
  EXPECT_NE(refusal.find("resp_max_queued_bytes"), std::string::npos) << refusal;
  EXPECT_TRUE(second.aborted());
  EXPECT_FALSE(first->aborted());
  EXPECT_EQ(queues.commands(), 2u);
  EXPECT_EQ(queues.bytes(), 2 * one);
  EXPECT_EQ(queues.refusals(RespQueueBound::kAllQueues), 1u);
  // Moved, the queue is still held once; destroyed, it is given back.
  RespTransaction moved(std::move(*first));
  first.reset();
  EXPECT_EQ(queues.bytes(), 2 * one);
  EXPECT_EQ(moved.size(), 2u);
  RespTransaction third({1 << 20, 100}, queues);
  EXPECT_EQ(third.queue({"SNOWID.ID"}, 1), "");
  { RespTransaction gone(std::move(moved)); }
  EXPECT_EQ(queues.commands(), 1u);
  EXPECT_EQ(queues.bytes(), one);
}

TEST(RespTransactionTest, AbortIsKeptAndNothingIsQueuedAfterIt) {
  RespQueues queues(1 << 20);
  RespTransaction transaction({64, 100}, queues);
  transaction.abort();
  EXPECT_EQ(transaction.queue({"PING"}, 1), "");
  EXPECT_TRUE(transaction.aborted());
  EXPECT_EQ(transaction.size(), 0u);
  EXPECT_EQ(queues.commands(), 0u);
}

}  // namespace
}  // namespace snowid::server
