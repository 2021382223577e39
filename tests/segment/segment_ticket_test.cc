// Ticket servers on two real SQLite files: identities, the checks of a set,
// and two nodes drawing numbers while one store is down and back.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <set>
#include <thread>

#include "id_checks.h"
#include "segment_test_support.h"
#include "snowid/ext/segment.h"

namespace snowid {
namespace {

using std::chrono::milliseconds;
using test::TempDir;

std::unique_ptr<SegmentStore> sqlite_at(const std::string& path) {
  auto store = open_segment_store("sqlite://" + path);
  EXPECT_TRUE(store.ok()) << store.error().message;
  return std::move(*store);
}

TEST(TicketIdentity, IsRecordedOnceAndOnlyInAStoreWithoutTags) {
  TempDir dir;
  auto store = sqlite_at(dir.file("a.db"));
  EXPECT_EQ(*store->ticket_identity(), (TicketIdentity{1, 0}));
  ASSERT_TRUE(store->set_ticket_identity({2, 1}).ok());
  EXPECT_EQ(*store->ticket_identity(), (TicketIdentity{2, 1}));
  EXPECT_TRUE(store->set_ticket_identity({2, 1}).ok());  // the same again
  Status changed = store->set_ticket_identity({2, 0});
  ASSERT_FALSE(changed.ok());
  EXPECT_NE(changed.error().message.find("never changed"), std::string::npos);
  // The identity row is no tag: not listed, not creatable, not takeable.
  ASSERT_TRUE(store->create_tag("orders", 1, 10, "").ok());
  EXPECT_EQ(store->list_tags(kAllSegmentTags)->size(), 1u);
  EXPECT_EQ(store->take_range("#ticket", std::nullopt).error().code, ErrorCode::kInvalidArgument);

  auto used = sqlite_at(dir.file("b.db"));
  ASSERT_TRUE(used->create_tag("orders", 1, 10, "").ok());
  Status late = used->set_ticket_identity({2, 0});
  ASSERT_FALSE(late.ok());
  EXPECT_NE(late.error().message.find("has tags already"), std::string::npos);

  for (TicketIdentity bad :
       {TicketIdentity{0, 0}, TicketIdentity{2, 2}, TicketIdentity{2, -1}, TicketIdentity{65, 0}}) {
    EXPECT_EQ(sqlite_at(dir.file("c.db"))->set_ticket_identity(bad).error().code,
              ErrorCode::kInvalidArgument);
  }
}

// Writes identities into fresh files and returns the set's URL.
std::string ticket_set(const TempDir& dir, std::vector<TicketIdentity> identities) {
  std::string url;
  for (std::size_t k = 0; k < identities.size(); ++k) {
    const std::string path = dir.file("ticket" + std::to_string(k) + ".db");
    if (identities[k].increment > 1) {
      EXPECT_TRUE(sqlite_at(path)->set_ticket_identity(identities[k]).ok());
    }
    url += (k == 0 ? "" : " ") + ("sqlite://" + path);
  }
  return url;
}

TEST(TicketStore, ASetThatCouldRepeatNumbersIsRefusedAtOpen) {
  struct Case {
    std::vector<TicketIdentity> identities;
    const char* says;
  };
  for (const Case& c : std::vector<Case>{
           {{{1, 0}, {2, 1}}, "has no ticket identity"},
           {{{2, 0}, {2, 0}}, "as ticket server 1 has"},
           {{{2, 0}, {3, 1}}, "has increment 3, ticket server 1 has 2"},
           {{{2, 0}, {2, 1}, {3, 2}}, "fewer than the 3 stores"},
       }) {
    TempDir dir;
    auto opened = open_segment_store(ticket_set(dir, c.identities));
    ASSERT_FALSE(opened.ok()) << c.says;
    EXPECT_EQ(opened.error().code, ErrorCode::kInvalidArgument);
    EXPECT_NE(opened.error().message.find(c.says), std::string::npos) << opened.error().message;
  }
  TempDir dir;
  auto good = open_segment_store(ticket_set(dir, {{3, 2}, {3, 0}}));  // 2 of 3 listed
  ASSERT_TRUE(good.ok()) << good.error().message;
  EXPECT_STREQ((*good)->kind(), "tickets");
}

TEST(TicketStore, EachStoreHandsOutItsOwnResidueClass) {
  TempDir dir;
  auto set = open_segment_store(ticket_set(dir, {{2, 0}, {2, 1}}));
  ASSERT_TRUE(set.ok()) << set.error().message;
  ASSERT_TRUE((*set)->create_tag("orders", 1, 7, "").ok());
  EXPECT_EQ((*set)->create_tag("orders", 1, 7, "").error().code, ErrorCode::kAlreadyExists);
  std::set<std::int64_t> residues;
  for (int i = 0; i < 4; ++i) {
    auto range = (*set)->take_range("orders", std::nullopt);
    ASSERT_TRUE(range.ok()) << range.error().message;
    EXPECT_EQ(range->stride, 2);
    EXPECT_EQ(range->first % 2, static_cast<std::int64_t>(range->source));
    residues.insert(range->first % 2);
  }
  EXPECT_EQ(residues.size(), 2u);  // the stores take turns
  auto rows = (*set)->list_tags(kAllSegmentTags);
  ASSERT_TRUE(rows.ok());
  ASSERT_EQ(rows->size(), 1u);
  EXPECT_EQ((*rows)[0].max_id, 15);  // two ranges of 7 from each store's 1
}

// Two nodes, each with its own connections to both files, draw numbers from
// several threads; store 1 goes down and comes back. No number twice, no
// refusal while a store answers, and both stores serve again at the end.
TEST(TicketStore, TwoNodesServeThroughAnOutageOfOneStoreWithoutRepeats) {
  TempDir dir;
  ticket_set(dir, {{2, 0}, {2, 1}});  // identities only: the members are opened below
  auto down = std::make_shared<std::atomic<bool>>(false);
  SegmentAllocatorOptions options;
  options.auto_create_tags = true;
  options.auto_create_step = 50;
  options.max_step = 200;
  options.request_timeout = milliseconds{5000};
  std::vector<std::unique_ptr<SegmentAllocator>> nodes;
  for (int n = 0; n < 2; ++n) {
    std::vector<std::unique_ptr<SegmentStore>> members;
    members.push_back(std::make_unique<test::FlakyStore>(sqlite_at(dir.file("ticket0.db")),
                                                         down));  // store 1 of the set
    members.push_back(sqlite_at(dir.file("ticket1.db")));
    auto set = open_ticket_store(std::move(members));
    ASSERT_TRUE(set.ok()) << set.error().message;
    auto node = SegmentAllocator::create(std::move(*set), options);
    ASSERT_TRUE(node.ok()) << node.error().message;
    nodes.push_back(std::move(*node));
  }

  constexpr int kThreads = 4;
  std::atomic<bool> stop{false};
  std::atomic<std::uint64_t> refused{0}, even_after_restart{0}, served_total{0};
  std::atomic<bool> restarted{false};
  std::vector<std::vector<std::int64_t>> per_thread(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      std::vector<std::int64_t>& mine = per_thread[static_cast<std::size_t>(t)];
      while (!stop.load()) {
        const std::size_t before = mine.size();
        if (!nodes[static_cast<std::size_t>(t % 2)]->next("orders", 5, mine).ok()) ++refused;
        served_total += mine.size() - before;
        if (restarted.load()) {
          for (std::size_t i = before; i < mine.size(); ++i) even_after_restart += mine[i] % 2 == 0;
        }
        std::this_thread::sleep_for(std::chrono::microseconds{100});
      }
    });
  }
  auto served = [&] { return served_total.load(); };
  std::this_thread::sleep_for(milliseconds{300});
  *down = true;
  const std::uint64_t at_stop = served();
  // More than the two nodes' buffers can hold (2 x 2 ranges of at most 200).
  const auto down_until = std::chrono::steady_clock::now() + std::chrono::seconds{20};
  while (served() < at_stop + 1500 && std::chrono::steady_clock::now() < down_until) {
    std::this_thread::sleep_for(milliseconds{10});
  }
  const std::uint64_t while_down = served() - at_stop;
  *down = false;
  restarted = true;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds{30};
  while (even_after_restart.load() < 100 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(milliseconds{10});
  }
  stop = true;
  for (auto& thread : threads) thread.join();

  EXPECT_GE(while_down, 1500u) << "the other store kept serving";
  EXPECT_EQ(refused.load(), 0u);
  EXPECT_GE(even_after_restart.load(), 100u) << "store 1 serves again after its return";
  std::vector<std::int64_t> all;
  for (const auto& numbers : per_thread) all.insert(all.end(), numbers.begin(), numbers.end());
  std::sort(all.begin(), all.end());
  EXPECT_EQ(std::adjacent_find(all.begin(), all.end()), all.end()) << "a number was issued twice";
  EXPECT_GT(all.size(), 2000u);
}

// The range memory of a ticket-server set is kept per member: one member put
// back from an older copy is noticed when the set asks it, the tag is
// refused, and a restarted node opened on the same memory refuses it too.
TEST(TicketStore, AMemberRestoredFromAnOlderCopyIsRefused) {
  TempDir dir;
  const std::string url = ticket_set(dir, {{2, 0}, {2, 1}});
  ASSERT_TRUE((*open_segment_store(url))->create_tag("orders", 1, 10, "").ok());
  std::filesystem::copy_file(dir.file("ticket1.db"), dir.file("backup1.db"));
  SegmentAllocatorOptions options;
  options.retry_initial = milliseconds{1};
  options.retry_max = milliseconds{20};
  options.request_timeout = milliseconds{500};
  options.range_memory = dir.file("segment-ranges");
  std::vector<std::int64_t> issued;
  {
    auto node = SegmentAllocator::open(url, options);
    ASSERT_TRUE(node.ok()) << node.error().message;
    ASSERT_TRUE((*node)->next("orders", 60, issued).ok());
  }
  std::filesystem::copy_file(dir.file("backup1.db"), dir.file("ticket1.db"),
                             std::filesystem::copy_options::overwrite_existing);
  auto restarted = SegmentAllocator::open(url, options);
  ASSERT_TRUE(restarted.ok()) << restarted.error().message;
  std::vector<std::int64_t> after;
  Status refused;
  for (int i = 0; i < 20 && refused.ok(); ++i) refused = (*restarted)->next("orders", 5, after);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message.find("ticket1.db handed"), std::string::npos)
      << refused.error().message;
  EXPECT_FALSE((*restarted)->readiness().ready);
  issued.insert(issued.end(), after.begin(), after.end());
  std::sort(issued.begin(), issued.end());
  EXPECT_EQ(std::adjacent_find(issued.begin(), issued.end()), issued.end()) << "a repeat";
}

}  // namespace
}  // namespace snowid
