// Segment mode on a real MariaDB server made for the test program (one
// mariadbd shared by every test here): the store's contract, its URL and
// password handling, several processes on one table, and serving Meituan
// Leaf's leaf_alloc table in place, before and after Leaf itself.
#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <thread>

#include "certificates.h"
#include "id_checks.h"
#include "mariadb_process.h"
#include "missing.h"
#include "own_rows_contract.h"
#include "segment_test_support.h"
#include "server_process.h"
#include "snowid/ext/segment.h"

namespace snowid {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using SteadyClock = std::chrono::steady_clock;

const std::string kCli = SNOWID_CLI_PATH;
const std::string kLoad = SEGMENT_LOAD_PATH;
const std::string kServer = SNOWIDD_PATH;

// Meituan Leaf's table, as its scripts/leaf_alloc.sql creates it.
constexpr const char* kLeafTable =
    "CREATE TABLE `leaf_alloc` ("
    "  `biz_tag` varchar(128) NOT NULL DEFAULT '',"
    "  `max_id` bigint(20) NOT NULL DEFAULT '1',"
    "  `step` int(11) NOT NULL,"
    "  `description` varchar(256) DEFAULT NULL,"
    "  `update_time` timestamp NOT NULL DEFAULT CURRENT_TIMESTAMP ON UPDATE CURRENT_TIMESTAMP,"
    "  PRIMARY KEY (`biz_tag`)"
    ") ENGINE=InnoDB";

class SegmentMariadb : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (test::MariadbProcess::available()) server_ = new test::MariadbProcess();
  }
  static void TearDownTestSuite() {
    delete server_;
    server_ = nullptr;
  }
  void SetUp() override {
    if (server_ == nullptr) SNOWID_SKIP_MISSING(test::MariadbProcess::kMissing);
    ASSERT_TRUE(server_->started()) << server_->error();
  }

  static std::unique_ptr<SegmentStore> store(const std::string& query = "") {
    SegmentStoreOptions options;
    options.call_timeout = milliseconds{10000};
    auto opened = open_segment_store(server_->url(query), options);
    EXPECT_TRUE(opened.ok()) << opened.error().message;
    return opened.ok() ? std::move(*opened) : nullptr;
  }

  // Leaf's table in database snowid, made by the first test that needs it.
  static void make_leaf_table() {
    std::string found;
    ASSERT_TRUE(server_->sql("SHOW TABLES LIKE 'leaf_alloc'", &found)) << server_->error();
    if (found.empty()) {
      ASSERT_TRUE(server_->sql(kLeafTable)) << server_->error();
    }
  }

  // Takes one range the way a Leaf node does (IDAllocMapper's statements in
  // one transaction, `step` NULL: the row's step) and returns the numbers
  // Leaf would hand out: [max_id - step, max_id).
  static std::vector<std::int64_t> leaf_fetch(const std::string& tag,
                                              std::optional<int> custom_step = std::nullopt) {
    const std::string by = custom_step ? std::to_string(*custom_step) : "step";
    std::string out;
    EXPECT_TRUE(server_->sql(
        "START TRANSACTION; UPDATE leaf_alloc SET max_id = max_id + " + by + " WHERE biz_tag = '" +
            tag + "'; SELECT max_id, step FROM leaf_alloc WHERE biz_tag = '" + tag + "'; COMMIT;",
        &out))
        << server_->error();
    const auto tab = out.find('\t');
    if (tab == std::string::npos) {
      ADD_FAILURE() << "Leaf's SELECT returned '" << out << "'";
      return {};
    }
    const std::int64_t max_id = std::stoll(out.substr(0, tab));
    const std::int64_t step = custom_step ? *custom_step : std::stoll(out.substr(tab + 1));
    std::vector<std::int64_t> numbers;
    for (std::int64_t n = max_id - step; n < max_id; ++n) numbers.push_back(n);
    return numbers;
  }

  static inline test::MariadbProcess* server_ = nullptr;
};

TEST_F(SegmentMariadb, StoreCreatesItsTableAndTakesRanges) {
  auto db = store();
  ASSERT_NE(db, nullptr);
  EXPECT_STREQ(db->kind(), "mysql");
  ASSERT_TRUE(db->ping().ok());
  ASSERT_TRUE(db->create_tag("my.basic", 1, 100, "first 'quoted' \\ text").ok());
  EXPECT_EQ(db->create_tag("my.basic", 1, 100, "").error().code, ErrorCode::kAlreadyExists);
  auto first = db->take_range("my.basic", std::nullopt);
  ASSERT_TRUE(first.ok()) << first.error().message;
  EXPECT_EQ(first->first, 1);
  EXPECT_EQ(first->end, 101);
  EXPECT_EQ(first->configured_step, 100);
  auto second = db->take_range("my.basic", 1000);
  ASSERT_TRUE(second.ok()) << second.error().message;
  EXPECT_EQ(second->first, 101);
  EXPECT_EQ(second->end, 1101);
  EXPECT_EQ(db->take_range("my.none", std::nullopt).error().code, ErrorCode::kNotFound);
  EXPECT_EQ(db->set_step("my.none", 5).error().code, ErrorCode::kNotFound);
  ASSERT_TRUE(db->set_step("my.basic", 5).ok());
  ASSERT_TRUE(db->set_step("my.basic", 5).ok()) << "setting the same step again is no error";
  EXPECT_EQ(db->set_step("my.basic", 0).error().code, ErrorCode::kInvalidArgument);
  ASSERT_TRUE(db->create_tag("My.Basic", 7, 3, "").ok()) << "tags are case-sensitive";
  // The table holds every tag of the rule: 128 characters of UTF-8 (384
  // bytes here), ':', '/', spaces; each its own row.
  std::string cjk_128;
  for (int i = 0; i < 128; ++i) cjk_128 += "\u8ba2";
  for (const std::string& tag : {cjk_128, std::string("order:pay"), std::string("a/b c")}) {
    ASSERT_TRUE(db->create_tag(tag, 40, 10, "").ok()) << tag;
    auto range = db->take_range(tag, std::nullopt);
    ASSERT_TRUE(range.ok()) << range.error().message;
    EXPECT_EQ(range->first, 40);
  }
  auto tags = db->list_tags(kAllSegmentTags);
  ASSERT_TRUE(tags.ok()) << tags.error().message;
  bool seen = false;
  for (const auto& tag : *tags) {
    if (tag.tag != "my.basic") continue;
    seen = true;
    EXPECT_EQ(tag.max_id, 1101);
    EXPECT_EQ(tag.step, 5);
    EXPECT_EQ(tag.description, "first 'quoted' \\ text");
    EXPECT_EQ(tag.updated_at.size(), 19u) << tag.updated_at;
  }
  EXPECT_TRUE(seen);
  auto one = db->list_tags(1);
  ASSERT_TRUE(one.ok()) << one.error().message;
  ASSERT_EQ(one->size(), 1u);
  EXPECT_EQ(one->front().tag, tags->front().tag);
  // A second store (a second connection) continues where the first stopped.
  auto third = store()->take_range("my.basic", std::nullopt);
  ASSERT_TRUE(third.ok()) << third.error().message;
  EXPECT_EQ(third->first, 1101);
  EXPECT_EQ(third->end, 1106);
}

TEST_F(SegmentMariadb, TheOverflowGuardKeepsMaxIdWithin63Bits) {
  constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();
  auto db = store();
  ASSERT_NE(db, nullptr);
  ASSERT_TRUE(db->create_tag("my.edge", kMax - 15, 10, "").ok());
  auto last = db->take_range("my.edge", std::nullopt);
  ASSERT_TRUE(last.ok()) << last.error().message;
  EXPECT_EQ(last->end, kMax - 5);
  auto too_far = db->take_range("my.edge", std::nullopt);
  ASSERT_FALSE(too_far.ok());
  EXPECT_EQ(too_far.error().code, ErrorCode::kUnavailable);
  EXPECT_NE(too_far.error().message.find("used up"), std::string::npos) << too_far.error().message;
  auto exact = db->take_range("my.edge", 5);
  ASSERT_TRUE(exact.ok()) << exact.error().message;
  EXPECT_EQ(exact->end, kMax);
  EXPECT_EQ(db->take_range("my.edge", 1).error().code, ErrorCode::kUnavailable);
  auto tags = db->list_tags(kAllSegmentTags);
  ASSERT_TRUE(tags.ok());
  for (const auto& tag : *tags) {
    if (tag.tag == "my.edge") {
      EXPECT_EQ(tag.max_id, kMax);
    }
  }
}

// snowid's own rows (own_rows_contract.h), each test under keys of its own.
SNOWID_OWN_ROWS_CONTRACT_TESTS(
    SegmentMariadb, [] { return store(); }, "#my")

// In Leaf's table every row is a tag to Leaf's servers, so it keeps no own
// rows (as it records no ticket identity); its clock is still read.
TEST_F(SegmentMariadb, LeafLayoutRefusesOwnRowsButTellsTheTime) {
  make_leaf_table();
  auto leaf = store("?layout=leaf");
  ASSERT_NE(leaf, nullptr);
  const Status created = leaf->create_own_row("#tag:order", 0, 1, "");
  EXPECT_EQ(created.error().code, ErrorCode::kInvalidArgument);
  EXPECT_NE(created.error().message.find("Leaf"), std::string::npos) << created.error().message;
  EXPECT_EQ(leaf->read_own_row("#tag:order").error().code, ErrorCode::kInvalidArgument);
  EXPECT_EQ(leaf->list_own_rows("#", 10).error().code, ErrorCode::kInvalidArgument);
  EXPECT_EQ(leaf->replace_own_row("#tag:order", 0, "").error().code, ErrorCode::kInvalidArgument);
  EXPECT_EQ(leaf->take_own_range("#tag:order", 1).error().code, ErrorCode::kInvalidArgument);
  std::string found;
  ASSERT_TRUE(server_->sql("SELECT COUNT(*) FROM leaf_alloc WHERE biz_tag LIKE '#%'", &found));
  EXPECT_EQ(found.substr(0, 1), "0");
  test::check_store_time_is_the_clock(*leaf);
}

TEST_F(SegmentMariadb, BadUrlsAreRefusedWithoutShowingThePassword) {
  const std::string port = std::to_string(server_->port());
  for (const std::string& url : std::vector<std::string>{
           "mysql://127.0.0.1:" + port + "/snowid",                       // no user
           "mysql://u:topsecret@127.0.0.1:" + port,                       // no database
           "mysql://u:topsecret@127.0.0.1:" + port + "/",                 // empty database
           "mysql://u:topsecret@127.0.0.1:99999/snowid",                  // bad port
           "mysql://u:topsecret@127.0.0.1:x/snowid",                      // bad port
           "mysql://u:topsecret@:3306/snowid",                            // no host
           "mysql://u:topsecret@127.0.0.1/snowid?sslmode=on",             // unknown parameter
           "mysql://u:topsecret@127.0.0.1/snowid?layout=dynamo",          // unknown layout
           "mysql://u:topsecret@127.0.0.1/snowid?table=leaf_alloc",       // table without leaf
           "mysql://u:topsecret@127.0.0.1/snowid?layout=leaf&table=a;b",  // not an identifier
           "mysql://u:topsecret@127.0.0.1/snowid?password_file=/x",       // password twice
           "mysql://u:top%zzsecret@127.0.0.1/snowid",                     // bad escape
           "mariadb://u@127.0.0.1/snowid?password_file=/nonexistent/pw",  // unreadable file
       }) {
    auto opened = open_segment_store(url);
    ASSERT_FALSE(opened.ok()) << url;
    EXPECT_EQ(opened.error().code, ErrorCode::kInvalidArgument) << url;
    EXPECT_EQ(opened.error().message.find("topsecret"), std::string::npos)
        << opened.error().message;
    EXPECT_NE(opened.error().message.find("MySQL URL"), std::string::npos)
        << opened.error().message;
  }
}

TEST_F(SegmentMariadb, PasswordsComeFromTheUrlOrAFile) {
  SegmentStoreOptions options;
  options.call_timeout = milliseconds{10000};
  const std::string port = std::to_string(server_->port());
  auto wrong = open_segment_store("mysql://snowid:not-it@127.0.0.1:" + port + "/snowid", options);
  ASSERT_TRUE(wrong.ok()) << "connecting is lazy";
  const Status refused = (*wrong)->ping();
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().code, ErrorCode::kUnavailable);
  EXPECT_NE(refused.error().message.find("Access denied"), std::string::npos)
      << refused.error().message;
  EXPECT_EQ(refused.error().message.find("not-it"), std::string::npos) << refused.error().message;

  test::TempDir dir;
  const std::string file = dir.file("password");
  ASSERT_EQ(test::run_process(
                {"/bin/sh", "-c",
                 std::string("printf '%s\\n' '") + test::MariadbProcess::kPassword + "' > " + file})
                .exit_code,
            0);
  auto from_file = open_segment_store(
      "mariadb://snowid@127.0.0.1:" + port + "/snowid?password_file=" + file, options);
  ASSERT_TRUE(from_file.ok()) << from_file.error().message;
  const Status answered = (*from_file)->ping();
  EXPECT_TRUE(answered.ok()) << answered.error().message;
}

// ssl_ca: TLS, and the server's certificate checked against the CA file.
TEST_F(SegmentMariadb, SslCaRequiresAVerifiedTlsConnection) {
  const std::string tls = "mysql://tls:" + std::string(test::MariadbProcess::kPassword) +
                          "@127.0.0.1:" + std::to_string(server_->port()) + "/snowid";
  SegmentStoreOptions options;
  options.call_timeout = milliseconds{10000};
  // The account requires TLS: refused without ssl_ca, served with it.
  auto plain = open_segment_store(tls, options);
  ASSERT_TRUE(plain.ok()) << plain.error().message;
  const Status denied = (*plain)->ping();
  ASSERT_FALSE(denied.ok());
  EXPECT_NE(denied.error().message.find("Access denied"), std::string::npos)
      << denied.error().message;
  auto verified = open_segment_store(tls + "?ssl_ca=" + server_->ca_file(), options);
  ASSERT_TRUE(verified.ok()) << verified.error().message;
  const Status answered = (*verified)->ping();
  EXPECT_TRUE(answered.ok()) << answered.error().message;
  // A server whose certificate does not chain to the CA file is refused.
  test::TempDir dir;
  const auto other = test::make_self_signed_certificate(dir.path(), "other", "127.0.0.1");
  auto impostor = open_segment_store(server_->url("?ssl_ca=" + other.cert), options);
  ASSERT_TRUE(impostor.ok()) << impostor.error().message;
  const Status refused = (*impostor)->ping();
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().code, ErrorCode::kUnavailable);
  EXPECT_NE(refused.error().message.find("TLS"), std::string::npos) << refused.error().message;
}

TEST_F(SegmentMariadb, UnreachableServerIsATimelyTransientError) {
  EXPECT_EQ(test::check_unreachable_is_timely("mysql://snowid@127.0.0.1:1/snowid"), "");
}

// A row another session keeps locked: the call gives up after the call
// timeout (innodb_lock_wait_timeout, the socket timeouts), and the next call
// after the lock is gone takes a range on a new connection.
TEST_F(SegmentMariadb, ALockedRowIsATimelyTransientError) {
  ASSERT_NE(store(), nullptr);
  ASSERT_TRUE(store()->create_tag("my.locked", 1, 10, "").ok());
  test::TempDir dir;
  test::BackgroundProcess holder(
      {"/usr/bin/mariadb", "--no-defaults", "--socket=" + server_->socket(), "-u", "root", "-D",
       "snowid", "-e",
       "START TRANSACTION; UPDATE snowid_segments SET step = step WHERE tag = 'my.locked'; "
       "SELECT SLEEP(4); COMMIT;"},
      dir.file("holder.out"));
  std::this_thread::sleep_for(milliseconds{500});  // the holder has the lock
  SegmentStoreOptions options;
  options.call_timeout = milliseconds{1000};
  auto opened = open_segment_store(server_->url(), options);
  ASSERT_TRUE(opened.ok()) << opened.error().message;
  const auto started = SteadyClock::now();
  auto blocked = (*opened)->take_range("my.locked", std::nullopt);
  const auto took = SteadyClock::now() - started;
  ASSERT_FALSE(blocked.ok());
  EXPECT_EQ(blocked.error().code, ErrorCode::kUnavailable);
  EXPECT_LT(took, milliseconds{3000}) << blocked.error().message;
  EXPECT_EQ(holder.wait(seconds{30}), 0) << test::read_file(dir.file("holder.out.err"));
  auto taken = (*opened)->take_range("my.locked", std::nullopt);
  ASSERT_TRUE(taken.ok()) << taken.error().message;
  EXPECT_EQ(taken->end - taken->first, 10);
}

// The server restarted under a store: a call may fail (the old connection
// is gone), the next one reconnects, and numbers go on from the row.
TEST_F(SegmentMariadb, ReconnectsAfterTheServerRestarts) {
  auto db = store();
  ASSERT_NE(db, nullptr);
  ASSERT_TRUE(db->create_tag("my.restart", 1, 10, "").ok());
  auto before = db->take_range("my.restart", std::nullopt);
  ASSERT_TRUE(before.ok()) << before.error().message;
  server_->stop();
  auto down = db->take_range("my.restart", std::nullopt);
  ASSERT_FALSE(down.ok());
  EXPECT_EQ(down.error().code, ErrorCode::kUnavailable);
  ASSERT_TRUE(server_->start()) << server_->error();
  Result<SegmentRange> after = db->take_range("my.restart", std::nullopt);
  if (!after.ok()) after = db->take_range("my.restart", std::nullopt);
  ASSERT_TRUE(after.ok()) << after.error().message;
  EXPECT_GE(after->first, before->end);
}

TEST_F(SegmentMariadb, TheCliManagesTags) {
  EXPECT_EQ(test::check_cli_manages_tags(kCli, server_->url(), "my"), "");
}

TEST_F(SegmentMariadb, TwoProcessesUnderLoadNeverShareANumber) {
  auto db = store();
  ASSERT_NE(db, nullptr);
  ASSERT_TRUE(db->create_tag("my.shared", 1, 50, "").ok());
  // Ranges of at most 50: the processes fetch often and race on the row.
  EXPECT_EQ(test::check_two_loads_share_nothing(kLoad, server_->url(), "my.shared", 50000, 50), "");
}

// Leaf's table served in place: Leaf hands out numbers, then snowid from the
// same row, then Leaf again (and snowid and Leaf at once); no number twice.
TEST_F(SegmentMariadb, ServesLeafsTableBetweenLeafRuns) {
  make_leaf_table();
  ASSERT_TRUE(
      server_->sql("INSERT INTO leaf_alloc (biz_tag, max_id, step, description) "
                   "VALUES ('leaf-test', 1, 100, 'Test leaf Segment Mode Get Id')"))
      << server_->error();

  // Leaf serves: its first fetch, a grown step, then the row's step.
  std::vector<std::int64_t> leaf_before;
  for (std::optional<int> step : {std::optional<int>(), std::optional<int>(200),
                                  std::optional<int>(400), std::optional<int>()}) {
    const auto numbers = leaf_fetch("leaf-test", step);
    leaf_before.insert(leaf_before.end(), numbers.begin(), numbers.end());
  }
  ASSERT_EQ(leaf_before.front(), 1);
  ASSERT_EQ(leaf_before.size(), 800u);

  // snowid serves the same row: two allocators, as two snowidd nodes.
  SegmentAllocatorOptions options;
  options.max_step = 1000;
  options.store.call_timeout = milliseconds{10000};
  options.request_timeout = milliseconds{10000};
  std::vector<std::vector<std::int64_t>> from_snowid(2);
  {
    std::vector<std::unique_ptr<SegmentAllocator>> nodes;
    for (int n = 0; n < 2; ++n) {
      auto allocator = SegmentAllocator::open(server_->url("?layout=leaf"), options);
      ASSERT_TRUE(allocator.ok()) << allocator.error().message;
      nodes.push_back(std::move(*allocator));
    }
    for (int round = 0; round < 30; ++round) {
      for (std::size_t n = 0; n < nodes.size(); ++n) {
        const Status taken = nodes[n]->next("leaf-test", 97, from_snowid[n]);
        ASSERT_TRUE(taken.ok()) << taken.error().message;
      }
    }
  }
  const std::int64_t leaf_highest = *std::max_element(leaf_before.begin(), leaf_before.end());
  for (const auto& numbers : from_snowid) {
    ASSERT_FALSE(numbers.empty());
    EXPECT_GT(*std::min_element(numbers.begin(), numbers.end()), leaf_highest);
  }

  // Leaf again after snowid: its numbers are above all of snowid's.
  std::vector<std::int64_t> leaf_after;
  for (int fetch = 0; fetch < 3; ++fetch) {
    const auto numbers = leaf_fetch("leaf-test");
    leaf_after.insert(leaf_after.end(), numbers.begin(), numbers.end());
  }
  std::int64_t snowid_highest = 0;
  for (const auto& numbers : from_snowid) {
    snowid_highest = std::max(snowid_highest, *std::max_element(numbers.begin(), numbers.end()));
  }
  EXPECT_GT(*std::min_element(leaf_after.begin(), leaf_after.end()), snowid_highest);

  // And both at once: a snowid process and Leaf fetching in turn.
  std::vector<std::int64_t> leaf_during;
  test::TempDir dir;
  {
    test::BackgroundProcess load(
        {kLoad, server_->url("?layout=leaf"), "leaf-test", "20000", "7", "300"},
        dir.file("load.out"));
    for (int fetch = 0; fetch < 20; ++fetch) {
      const auto numbers = leaf_fetch("leaf-test", fetch % 2 == 0 ? 50 : 100);
      leaf_during.insert(leaf_during.end(), numbers.begin(), numbers.end());
    }
    EXPECT_EQ(load.wait(seconds{90}), 0) << test::read_file(dir.file("load.out.err"));
  }
  const auto load_numbers = test::read_numbers(dir.file("load.out"));
  EXPECT_EQ(load_numbers.size(), 20000u);

  EXPECT_EQ(test::check_unique_and_increasing({leaf_before, from_snowid[0], from_snowid[1],
                                               leaf_after, leaf_during, load_numbers}),
            "");

  // snowid's CLI lists Leaf's row; Leaf's update_time is kept up to date.
  auto leaf_store = store("?layout=leaf");
  ASSERT_NE(leaf_store, nullptr);
  auto rows = leaf_store->list_tags(kAllSegmentTags);
  ASSERT_TRUE(rows.ok()) << rows.error().message;
  const auto row = std::find_if(rows->begin(), rows->end(),
                                [](const SegmentTagRecord& r) { return r.tag == "leaf-test"; });
  ASSERT_NE(row, rows->end());
  EXPECT_EQ(row->description, "Test leaf Segment Mode Get Id");
  EXPECT_EQ(row->step, 100);
  EXPECT_FALSE(row->updated_at.empty());
}

// snowidd pointed at Leaf's table answers Leaf's route above Leaf's numbers,
// and shows the store without its password.
TEST_F(SegmentMariadb, SnowiddServesLeafsTable) {
  make_leaf_table();
  ASSERT_TRUE(server_->sql("INSERT INTO leaf_alloc (biz_tag, max_id, step) VALUES ('web', 1, 50)"))
      << server_->error();
  std::vector<std::int64_t> numbers = leaf_fetch("web");
  const std::int64_t leaf_highest = numbers.back();
  test::TempDir state;
  test::ServerProcess snowidd(
      kServer, {"--state-dir", state.path(), "--segment-store", server_->url("?layout=leaf")});
  ASSERT_TRUE(snowidd.started()) << snowidd.log();
  std::vector<std::int64_t> served;
  for (int i = 0; i < 60; ++i) {
    const test::HttpReply reply = test::http_get(snowidd.port(), "/api/segment/get/web");
    ASSERT_EQ(reply.status, 200) << reply.body;
    served.push_back(std::stoll(reply.body));
  }
  EXPECT_GT(served.front(), leaf_highest);
  const auto after = leaf_fetch("web");
  EXPECT_EQ(test::check_unique_and_increasing({numbers, served, after}), "");
  const test::HttpReply info = test::http_get(snowidd.port(), "/v1/info");
  EXPECT_EQ(info.body.find(test::MariadbProcess::kPassword), std::string::npos) << info.body;
  EXPECT_NE(info.body.find("layout=leaf"), std::string::npos) << info.body;
  EXPECT_EQ(snowidd.log().find(test::MariadbProcess::kPassword), std::string::npos);
}

// A ticket identity is recorded once, in an empty snowid_segments, and two
// MariaDB stores with their own identities serve one tag without a number twice.
TEST_F(SegmentMariadb, RecordsATicketIdentityAndServesAsATicketServer) {
  const std::string port = std::to_string(server_->port());
  std::vector<std::string> urls;
  for (const std::string db : {"tickets_a", "tickets_b"}) {
    ASSERT_TRUE(server_->sql("CREATE DATABASE " + db + "; GRANT ALL ON " + db +
                             ".* TO 'snowid'@'127.0.0.1'"))
        << server_->error();
    urls.push_back("mysql://snowid:" + std::string(test::MariadbProcess::kPassword) +
                   "@127.0.0.1:" + port + "/" + db);
  }
  for (std::size_t k = 0; k < urls.size(); ++k) {
    auto member = open_segment_store(urls[k]);
    ASSERT_TRUE(member.ok()) << member.error().message;
    auto none = (*member)->ticket_identity();
    ASSERT_TRUE(none.ok()) << none.error().message;
    EXPECT_EQ(*none, TicketIdentity{});
    const TicketIdentity identity{2, static_cast<std::int64_t>(k)};
    const Status recorded = (*member)->set_ticket_identity(identity);
    ASSERT_TRUE(recorded.ok()) << recorded.error().message;
    EXPECT_TRUE((*member)->set_ticket_identity(identity).ok()) << "the same again is no error";
    EXPECT_EQ((*member)->set_ticket_identity({2, 1 - identity.remainder}).error().code,
              ErrorCode::kInvalidArgument);
    auto read = (*member)->ticket_identity();
    ASSERT_TRUE(read.ok()) << read.error().message;
    EXPECT_EQ(*read, identity);
    ASSERT_TRUE((*member)->create_tag("t.shared", 1, 20, "").ok());
    auto listed = (*member)->list_tags(kAllSegmentTags);
    ASSERT_TRUE(listed.ok()) << listed.error().message;
    ASSERT_EQ(listed->size(), 1u) << "the identity row is not a tag";
  }
  // A table with tags takes no identity; Leaf's table takes none at all.
  EXPECT_EQ(store()->set_ticket_identity({2, 0}).error().code, ErrorCode::kInvalidArgument);
  make_leaf_table();
  EXPECT_EQ(store("?layout=leaf")->set_ticket_identity({2, 0}).error().code,
            ErrorCode::kInvalidArgument);

  SegmentAllocatorOptions options;
  options.max_step = 40;
  options.request_timeout = milliseconds{10000};
  auto allocator = SegmentAllocator::open(urls[0] + " " + urls[1], options);
  ASSERT_TRUE(allocator.ok()) << allocator.error().message;
  std::vector<std::int64_t> numbers;
  ASSERT_TRUE((*allocator)->next("t.shared", 500, numbers).ok());
  std::sort(numbers.begin(), numbers.end());
  EXPECT_EQ(std::adjacent_find(numbers.begin(), numbers.end()), numbers.end());
  EXPECT_TRUE(std::any_of(numbers.begin(), numbers.end(), [](auto n) { return n % 2 == 0; }));
  EXPECT_TRUE(std::any_of(numbers.begin(), numbers.end(), [](auto n) { return n % 2 == 1; }));
}

TEST_F(SegmentMariadb, LeafLayoutNeverCreatesATableAndRefusesTagsOutsideTheRule) {
  auto missing = store("?layout=leaf&table=no_such_table");
  ASSERT_NE(missing, nullptr);
  const Status refused = missing->ping();
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message.find("'no_such_table' does not exist"), std::string::npos)
      << refused.error().message;
  EXPECT_NE(refused.error().message.find("never creates"), std::string::npos)
      << refused.error().message;
  std::string tables;
  ASSERT_TRUE(server_->sql("SHOW TABLES LIKE 'no_such_table'", &tables)) << server_->error();
  EXPECT_EQ(tables, "");

  // Another name for Leaf's table: every biz_tag its varchar(128) holds is
  // served ("order:pay", "a/b", "with space", 128 characters), but for one
  // with a control character or a '#' first, listed but refused.
  std::string ddl(kLeafTable);
  ddl.replace(ddl.find("`leaf_alloc`"), 12, "`t_leaf_alloc`");
  ASSERT_TRUE(server_->sql(ddl)) << server_->error();
  const std::string long_tag(128, 'x');
  ASSERT_TRUE(server_->sql("INSERT INTO t_leaf_alloc (biz_tag, max_id, step) VALUES ('" + long_tag +
                           "', 1, 10), ('ok-tag', 5, 10), ('order:pay', 1, 10), ('a/b', 1, 10), "
                           "('with space', 1, 10), ('tab\\there', 1, 10), ('#hash', 1, 10)"))
      << server_->error();
  auto leaf = store("?layout=leaf&table=t_leaf_alloc");
  ASSERT_NE(leaf, nullptr);
  auto rows = leaf->list_tags(kAllSegmentTags);
  ASSERT_TRUE(rows.ok()) << rows.error().message;
  EXPECT_EQ(rows->size(), 6u);  // '#hash' is hidden as snowid's own rows are
  for (const std::string& tag : {long_tag, std::string("order:pay"), std::string("a/b"),
                                std::string("with space")}) {
    auto range = leaf->take_range(tag, std::nullopt);
    ASSERT_TRUE(range.ok()) << tag << ": " << range.error().message;
    EXPECT_EQ(range->first, 1) << tag;
    EXPECT_EQ(range->end, 11) << tag;
  }
  for (const std::string& tag : {std::string("tab\there"), std::string("#hash")}) {
    auto refused_tag = leaf->take_range(tag, std::nullopt);
    ASSERT_FALSE(refused_tag.ok()) << tag;
    EXPECT_EQ(refused_tag.error().code, ErrorCode::kInvalidArgument) << tag;
  }
  auto served = leaf->take_range("ok-tag", std::nullopt);
  ASSERT_TRUE(served.ok()) << served.error().message;
  EXPECT_EQ(served->first, 5);
  EXPECT_EQ(served->end, 15);
  // Creating a tag adds a row to Leaf's table (as an operator would by hand).
  ASSERT_TRUE(leaf->create_tag("new-tag", 1, 500, "").ok());
  std::string row;
  ASSERT_TRUE(
      server_->sql("SELECT max_id, step FROM t_leaf_alloc WHERE biz_tag = 'new-tag'", &row));
  EXPECT_EQ(row, "1\t500\n");
}

}  // namespace
}  // namespace snowid
