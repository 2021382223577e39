// snowid::Client against hostile nodes: an in-process gRPC server that
// answers NextIds, NextSegmentIds and NextBusinessIds as a broken node, or a proxy in
// between, might (the gRPC side of tests/support/hostile_node.py, which the
// HTTP clients meet). The client must hand out nothing but IDs a node could
// have issued (docs/clients.md, "What a client accepts"): each bad answer
// is discarded whole, counted in stats().invalid_answers, and its endpoint
// fails over to the next one.
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <limits>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "snowid/client.h"
#include "snowid/v1/snowid.grpc.pb.h"
#include "thread_sanitizer.h"

namespace snowid {
namespace {

using namespace std::chrono_literals;
using std::chrono::milliseconds;
using std::chrono::steady_clock;

constexpr std::uint64_t kFirstId = 1'000'000;
constexpr std::uint64_t kOtherFirstId = 5'000'000'000;
constexpr std::uint64_t kTwoTo63 = std::uint64_t{1} << 63;

enum class Mode {
  kValid,       // increasing batches, each above the last
  kTwoIssuers,  // valid batches of two issuers in turn (a proxy over two nodes)
  kDuplicates,  // every ID twice
  kAt2To63,     // every other ID 2^63
  kEmpty,       // no IDs
  kTooMany,     // count + 1 IDs
  kDescending,  // the batch in decreasing order
  kBehind,      // every batch from kFirstId again, one issuer
  kSlow,        // a valid batch after 2 s
  kHuge,        // 300,000 IDs, above the channel's receive limit
  // Business IDs only (the others answer as kValid):
  kControlCharacter,  // the second ID holds a line break
  kLongId,            // the second ID is 257 bytes
  kEmptyId,           // the second ID is ""
};

// One hostile node on a free loopback port, in this process.
class HostileNode final : public v1::IdService::Service {
 public:
  explicit HostileNode(Mode mode) : mode_(mode) {
    grpc::ServerBuilder builder;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port_);
    builder.RegisterService(this);
    server_ = builder.BuildAndStart();
  }
  ~HostileNode() override { server_->Shutdown(std::chrono::system_clock::now() + 1s); }

  std::string endpoint() const { return "127.0.0.1:" + std::to_string(port_); }
  int asked() const { return asked_.load(); }
  int business_asked() const { return business_asked_.load(); }

  grpc::Status NextIds(grpc::ServerContext* context, const v1::NextIdsRequest* request,
                       v1::NextIdsResponse* response) override {
    for (const std::uint64_t id : answer(context, request->count())) response->add_ids(id);
    return grpc::Status::OK;
  }

  grpc::Status NextSegmentIds(grpc::ServerContext* context,
                              const v1::NextSegmentIdsRequest* request,
                              v1::NextSegmentIdsResponse* response) override {
    for (const std::uint64_t id : answer(context, request->count())) response->add_ids(id);
    return grpc::Status::OK;
  }

  // Business IDs "B-<n>" of the numbers NextIds would give, spoiled as the
  // mode says.
  grpc::Status NextBusinessIds(grpc::ServerContext* context,
                               const v1::NextBusinessIdsRequest* request,
                               v1::NextBusinessIdsResponse* response) override {
    business_asked_.fetch_add(1);
    const std::uint64_t count = std::max<std::uint64_t>(1, request->count());
    for (const std::uint64_t id : answer(context, count)) {
      response->add_ids("B-" + std::to_string(id));
    }
    if (response->ids_size() < 2) return grpc::Status::OK;
    if (mode_ == Mode::kControlCharacter) response->set_ids(1, "B-\n1");
    if (mode_ == Mode::kLongId) response->set_ids(1, std::string(257, 'B'));
    if (mode_ == Mode::kEmptyId) response->set_ids(1, "");
    return grpc::Status::OK;
  }

 private:
  std::vector<std::uint64_t> answer(grpc::ServerContext* context, std::uint64_t count) {
    const int n = asked_.fetch_add(1) + 1;
    const bool other = mode_ == Mode::kTwoIssuers && n % 2 == 0;
    context->AddInitialMetadata("snowid-issuer", other ? "00000000000000b2" : "00000000000000a1");
    std::vector<std::uint64_t> ids;
    {
      std::lock_guard lock(mutex_);
      std::uint64_t& next = other ? next_other_ : next_;
      if (mode_ == Mode::kBehind) next = kFirstId;
      const std::uint64_t size = mode_ == Mode::kHuge ? 300'000 : count;
      for (std::uint64_t i = 0; i < size; ++i) ids.push_back(next++);
    }
    switch (mode_) {
      case Mode::kDuplicates:
        for (std::size_t i = 1; i < ids.size(); i += 2) ids[i] = ids[i - 1];
        break;
      case Mode::kAt2To63:
        for (std::size_t i = 1; i < ids.size(); i += 2) ids[i] = kTwoTo63;
        break;
      case Mode::kEmpty:
        ids.clear();
        break;
      case Mode::kTooMany:
        ids.push_back(ids.back() + 1);
        break;
      case Mode::kDescending:
        std::reverse(ids.begin(), ids.end());
        break;
      case Mode::kSlow:
        std::this_thread::sleep_for(2s);
        break;
      default:
        break;
    }
    return ids;
  }

  const Mode mode_;
  int port_ = 0;
  std::unique_ptr<grpc::Server> server_;
  std::atomic<int> asked_{0};
  std::atomic<int> business_asked_{0};
  std::mutex mutex_;
  std::uint64_t next_ = kFirstId;
  std::uint64_t next_other_ = kOtherFirstId;
};

// Under ThreadSanitizer a first call to an in-process gRPC server often
// fails before it reaches it, and the client rightly moves on: which node
// answers first is then not the test's to choose (thread_sanitizer.h).
constexpr const char* kFirstCallsUnordered = "first calls not ordered";

ClientOptions options_for(std::vector<std::string> endpoints) {
  ClientOptions o;
  o.endpoints = std::move(endpoints);
  o.initial_batch = 100;
  o.max_batch = 1000;
  // Room for a first connection under ThreadSanitizer, which takes far
  // longer than the answers themselves.
  o.call_deadline = 3000ms;
  o.empty_wait = 3000ms;
  o.backoff_initial = 20ms;
  o.backoff_max = 200ms;
  return o;
}

std::unique_ptr<Client> open_client(const ClientOptions& options) {
  auto client = Client::open(options);
  EXPECT_TRUE(client.ok()) << client.error().message;
  return client.ok() ? std::move(*client) : nullptr;
}

// A client of `node` alone, in batches of at most 100 (several batches soon).
std::unique_ptr<Client> open_small_batches(const HostileNode& node) {
  ClientOptions options = options_for({node.endpoint()});
  options.max_batch = 100;
  return open_client(options);
}

// `n` IDs (tag empty: Snowflake IDs), each checked as a node could have
// issued it; fails the test on the first error.
std::vector<std::int64_t> draw(Client& client, int n, const std::string& tag = "") {
  std::vector<std::int64_t> ids;
  for (int i = 0; i < n; ++i) {
    auto id = tag.empty() ? client.next() : client.next(tag);
    EXPECT_TRUE(id.ok()) << "call " << i << ": " << (id.ok() ? "" : id.error().message);
    if (!id.ok()) break;
    ids.push_back(*id);
  }
  return ids;
}

// A client of `hostile` (in `mode`) and `valid`, its deadline below a slow
// node's answer.
std::unique_ptr<Client> open_beside(const HostileNode& hostile, const HostileNode& valid,
                                    Mode mode) {
  ClientOptions options = options_for({hostile.endpoint(), valid.endpoint()});
  if (mode == Mode::kSlow) options.call_deadline = 1000ms;  // the answer takes 2 s
  return open_client(options);
}

class HostileModeTest : public ::testing::TestWithParam<Mode> {};

// Beside a valid node, every bad answer is discarded and counted; what the
// client hands out comes from the valid node alone, all distinct and
// increasing (both nodes count from kFirstId, so a bad ID let through
// would repeat one).
TEST_P(HostileModeTest, BadAnswersAreDiscardedAndTheNextNodeServes) {
  SKIP_UNDER_THREAD_SANITIZER(kFirstCallsUnordered);
  HostileNode hostile(GetParam());
  HostileNode valid(Mode::kValid);
  auto client = open_beside(hostile, valid, GetParam());
  ASSERT_NE(client, nullptr);
  // Refills go to either node at random: drawn until the hostile one was
  // asked for both kinds of buffer (its backoff, at most backoff_max, over
  // between rounds).
  for (const std::string tag : {"", "orders"}) {
    const int asked_before = hostile.asked();
    for (int round = 0; round < 40 && hostile.asked() == asked_before; ++round) {
      if (round > 0) std::this_thread::sleep_for(100ms);
      const std::vector<std::int64_t> ids = draw(*client, 350, tag);
      ASSERT_EQ(ids.size(), 350u);
      for (std::size_t i = 0; i < ids.size(); ++i) {
        EXPECT_GE(ids[i], static_cast<std::int64_t>(kFirstId));
        if (i > 0) {
          EXPECT_GT(ids[i], ids[i - 1]) << "at " << i;
        }
      }
    }
    EXPECT_GT(hostile.asked(), asked_before) << "tag '" << tag << "'";
  }
  if (GetParam() != Mode::kSlow) {
    // Each bad answer is counted and fails the endpoint at once (backoff,
    // then the valid node), never a batch halved and asked again of the
    // same node (one call may be under way as this is read).
    const auto invalid = static_cast<int>(client->stats().invalid_answers);
    EXPECT_GE(invalid, 1);
    EXPECT_LE(hostile.asked() - invalid, 1) << "asked " << hostile.asked();
  }
}

INSTANTIATE_TEST_SUITE_P(EveryBadAnswer, HostileModeTest,
                         ::testing::Values(Mode::kDuplicates, Mode::kAt2To63, Mode::kEmpty,
                                           Mode::kTooMany, Mode::kDescending, Mode::kSlow,
                                           Mode::kHuge));

class HostileBusinessTest : public ::testing::TestWithParam<Mode> {};

// Business IDs are not buffered, but their answers are checked as strictly:
// beside a valid node every bad answer is discarded, counted and the call
// passed to the valid node (both count from kFirstId, so a bad answer let
// through would repeat an ID); alone, the call fails and hands out nothing.
TEST_P(HostileBusinessTest, BadAnswersAreDiscardedAndTheNextNodeServes) {
  SKIP_UNDER_THREAD_SANITIZER(kFirstCallsUnordered);
  HostileNode hostile(GetParam());
  HostileNode valid(Mode::kValid);
  auto client = open_beside(hostile, valid, GetParam());
  ASSERT_NE(client, nullptr);
  std::vector<std::string> ids;
  for (int round = 0; round < 40 && hostile.business_asked() == 0; ++round) {
    const Status status = client->next_business("orders", 10, ids);
    ASSERT_TRUE(status.ok()) << status.error().message;
  }
  EXPECT_EQ(hostile.business_asked(), 1);
  EXPECT_EQ(std::set<std::string>(ids.begin(), ids.end()).size(), ids.size());
  EXPECT_EQ(ids.size() % 10, 0u);
  if (GetParam() != Mode::kSlow) {
    // At least that answer (the refill thread's NextIds calls may add theirs).
    EXPECT_GE(client->stats().invalid_answers, 1u);
  }

  ClientOptions alone = options_for({hostile.endpoint()});
  alone.call_deadline = 1000ms;
  auto lonely = open_client(alone);
  ASSERT_NE(lonely, nullptr);
  std::vector<std::string> none;
  const Status refused = lonely->next_business("orders", 10, none);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().code, ErrorCode::kUnavailable) << refused.error().message;
  EXPECT_TRUE(none.empty());
}

INSTANTIATE_TEST_SUITE_P(EveryBadAnswer, HostileBusinessTest,
                         ::testing::Values(Mode::kDuplicates, Mode::kEmpty, Mode::kTooMany,
                                           Mode::kSlow, Mode::kHuge, Mode::kControlCharacter,
                                           Mode::kLongId, Mode::kEmptyId));

// Alone, a hostile node gets nothing handed out: the call fails within
// empty_wait, never with an ID.
TEST(HostileNodeTest, AloneItGivesAnErrorNeverAnId) {
  SKIP_UNDER_THREAD_SANITIZER(kFirstCallsUnordered);
  for (const Mode mode : {Mode::kDuplicates, Mode::kAt2To63, Mode::kEmpty, Mode::kTooMany,
                          Mode::kDescending, Mode::kHuge}) {
    HostileNode hostile(mode);
    ClientOptions options = options_for({hostile.endpoint()});
    options.empty_wait = 1500ms;
    auto client = open_client(options);
    ASSERT_NE(client, nullptr);
    const auto began = steady_clock::now();
    const auto id = client->next();
    EXPECT_FALSE(id.ok()) << "mode " << static_cast<int>(mode) << " handed out " << *id;
    if (!id.ok()) {
      EXPECT_EQ(id.error().code, ErrorCode::kUnavailable) << id.error().message;
    }
    EXPECT_LT(steady_clock::now() - began, 5s);
    const auto answered_by = steady_clock::now() + 5s;
    while (client->stats().invalid_answers == 0 && steady_clock::now() < answered_by) {
      std::this_thread::sleep_for(10ms);
    }
    EXPECT_GE(client->stats().invalid_answers, 1u);
  }
}

// A node that starts its batches again below its last is refused after the
// first, under the same issuer.
TEST(HostileNodeTest, ABatchBelowItsIssuersLastIsRefused) {
  SKIP_UNDER_THREAD_SANITIZER(kFirstCallsUnordered);
  HostileNode behind(Mode::kBehind);
  auto client = open_small_batches(behind);
  ASSERT_NE(client, nullptr);
  std::set<std::int64_t> seen;
  for (int i = 0; i < 1000; ++i) {
    auto id = client->next();
    if (!id.ok()) break;
    EXPECT_TRUE(seen.insert(*id).second) << "handed out twice: " << *id;
  }
  EXPECT_LT(seen.size(), 200u);
  EXPECT_GE(client->stats().invalid_answers, 1u);
}

// Batches of two issuers in turn, each issuer's above its own last, are all
// taken: a proxy in front of two nodes is followed node by node.
TEST(HostileNodeTest, BatchesOfTwoIssuersInTurnAreTaken) {
  SKIP_UNDER_THREAD_SANITIZER(kFirstCallsUnordered);
  HostileNode proxy(Mode::kTwoIssuers);
  auto client = open_small_batches(proxy);
  ASSERT_NE(client, nullptr);
  const std::vector<std::int64_t> ids = draw(*client, 1000);
  EXPECT_EQ(std::set<std::int64_t>(ids.begin(), ids.end()).size(), ids.size());
  EXPECT_EQ(client->stats().invalid_answers, 0u);
  EXPECT_GE(proxy.asked(), 4);
}

}  // namespace
}  // namespace snowid
