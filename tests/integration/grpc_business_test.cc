// Business IDs and tag administration over gRPC against a real snowidd
// (tests/support/business_node.h): NextBusinessIds, CreateTag, ListTags,
// GetTag, ChangeTag and RetireTag, their tokens and their refusals.
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <set>
#include <string>

#include "business_node.h"
#include "snowid/v1/snowid.grpc.pb.h"

namespace snowid {
namespace {

namespace v1 = ::snowid::v1;

class GrpcBusinessTest : public ::testing::Test {
 protected:
  test::TempDir dir;
  std::unique_ptr<test::ServerProcess> server;
  std::unique_ptr<v1::IdService::Stub> stub;

  void SetUp() override {
    server = test::start_business_node(dir, {"--max-batch", "100"});
    ASSERT_TRUE(server->started()) << server->log();
    stub = v1::IdService::NewStub(grpc::CreateChannel(
        "127.0.0.1:" + std::to_string(server->grpc_port()), grpc::InsecureChannelCredentials()));
  }

  static std::unique_ptr<grpc::ClientContext> context(const std::string& token) {
    auto c = std::make_unique<grpc::ClientContext>();
    c->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds{10});
    if (!token.empty()) c->AddMetadata("authorization", "Bearer " + token);
    return c;
  }

  grpc::Status create(const std::string& tag, const std::string& template_text,
                      const std::string& token = test::kAdminToken, v1::Tag* out = nullptr) {
    v1::CreateTagRequest request;
    request.set_tag(tag);
    request.set_template_(template_text);
    request.set_step(50);
    v1::Tag response;
    grpc::Status status = stub->CreateTag(context(token).get(), request, &response);
    if (out != nullptr) *out = response;
    return status;
  }

  grpc::Status business(const std::string& tag, std::uint64_t count, v1::NextBusinessIdsResponse& out,
                        const std::string& token = test::kOrdersToken) {
    v1::NextBusinessIdsRequest request;
    request.set_tag(tag);
    request.set_count(count);
    out.Clear();
    return stub->NextBusinessIds(context(token).get(), request, &out);
  }
};

TEST_F(GrpcBusinessTest, NextBusinessIdsRendersTheTemplateAndNeverRepeats) {
  v1::Tag created;
  ASSERT_TRUE(create("orders", "ORD-{seq:06}", test::kAdminToken, &created).ok());
  EXPECT_EQ(created.tag(), "orders");
  EXPECT_EQ(created.template_(), "ORD-{seq:06}");
  EXPECT_EQ(created.zone(), "UTC");
  EXPECT_FALSE(created.retired());

  v1::NextBusinessIdsResponse one;
  ASSERT_TRUE(business("orders", 0, one).ok());  // count 0 means 1
  ASSERT_EQ(one.ids_size(), 1);
  EXPECT_EQ(one.ids(0), "ORD-000001");
  v1::NextBusinessIdsResponse many;
  ASSERT_TRUE(business("orders", 100, many).ok());
  ASSERT_EQ(many.ids_size(), 100);
  std::set<std::string> seen{one.ids(0)};
  for (const std::string& id : many.ids()) {
    EXPECT_TRUE(seen.insert(id).second) << id;
    EXPECT_EQ(id.rfind("ORD-", 0), 0u) << id;
    EXPECT_EQ(id.size(), 10u) << id;
  }
}

// Each refusal has the code the .proto names, and a bad count the code
// NextSegmentIds gives the same count.
TEST_F(GrpcBusinessTest, RefusalsCarryTheDocumentedCodes) {
  ASSERT_TRUE(create("orders", "ORD-{seq:06}").ok());
  v1::NextBusinessIdsResponse ids;
  // No token, and a token that opens other tags only.
  EXPECT_EQ(business("orders", 1, ids, "").error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(business("orders", 1, ids, "wrong").error_code(), grpc::StatusCode::UNAUTHENTICATED);
  ASSERT_TRUE(create("invoices", "INV-{seq:06}").ok());
  EXPECT_EQ(business("invoices", 1, ids).error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_TRUE(business("invoices", 1, ids, test::kAdminToken).ok());
  // Unknown tag; a plain tag (no template).
  EXPECT_EQ(business("nosuch", 1, ids, test::kAdminToken).error_code(),
            grpc::StatusCode::NOT_FOUND);
  ASSERT_TRUE(create("plain", "").ok());
  EXPECT_EQ(business("plain", 1, ids).error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  // Bad counts: the codes of NextSegmentIds for the same count.
  for (const std::uint64_t count : {std::uint64_t{101}, (std::uint64_t{1} << 32) + 1}) {
    v1::NextSegmentIdsRequest segment;
    segment.set_tag("plain");
    segment.set_count(count);
    v1::NextSegmentIdsResponse numbers;
    const grpc::StatusCode expected =
        stub->NextSegmentIds(context(test::kOrdersToken).get(), segment, &numbers).error_code();
    EXPECT_NE(expected, grpc::StatusCode::OK);
    EXPECT_EQ(business("orders", count, ids).error_code(), expected) << count;
  }
  EXPECT_EQ(business("orders", 101, ids).error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  // A bad tag.
  EXPECT_EQ(business("#tag:orders", 1, ids, test::kAdminToken).error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);
  // Retired: FAILED_PRECONDITION, and never an ID again.
  v1::RetireTagRequest retire;
  retire.set_tag("orders");
  v1::Tag retired;
  ASSERT_TRUE(stub->RetireTag(context(test::kAdminToken).get(), retire, &retired).ok());
  EXPECT_TRUE(retired.retired());
  const grpc::Status refused = business("orders", 1, ids);
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::FAILED_PRECONDITION)
      << refused.error_message();
  EXPECT_EQ(ids.ids_size(), 0);
}

// Create, list, get, change and retire need an admin token; a change sets
// only what the request sets.
TEST_F(GrpcBusinessTest, TagAdministrationNeedsAnAdminToken) {
  v1::Tag tag;
  EXPECT_EQ(create("orders", "ORD-{seq:06}", test::kOrdersToken).error_code(),
            grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(create("orders", "ORD-{seq:06}", "").error_code(),
            grpc::StatusCode::UNAUTHENTICATED);
  ASSERT_TRUE(create("orders", "ORD-{yyyyMMdd}-{seq:06}", test::kAdminToken, &tag).ok());
  const std::int64_t created_version = tag.version();
  EXPECT_GT(created_version, 0);
  EXPECT_EQ(create("orders", "ORD-{seq:06}").error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_EQ(create("bad", "ORD-{seq}-{seq}").error_code(), grpc::StatusCode::INVALID_ARGUMENT);

  v1::ListTagsResponse list;
  EXPECT_EQ(stub->ListTags(context(test::kOrdersToken).get(), {}, &list).error_code(),
            grpc::StatusCode::UNAUTHENTICATED);
  ASSERT_TRUE(stub->ListTags(context(test::kAdminToken).get(), {}, &list).ok());
  ASSERT_EQ(list.tags_size(), 1);
  EXPECT_EQ(list.tags(0).tag(), "orders");
  EXPECT_EQ(list.tags(0).template_(), "ORD-{yyyyMMdd}-{seq:06}");

  v1::GetTagRequest get;
  get.set_tag("orders");
  EXPECT_EQ(stub->GetTag(context(test::kOrdersToken).get(), get, &tag).error_code(),
            grpc::StatusCode::UNAUTHENTICATED);
  ASSERT_TRUE(stub->GetTag(context(test::kAdminToken).get(), get, &tag).ok());
  EXPECT_EQ(tag.template_(), "ORD-{yyyyMMdd}-{seq:06}");
  EXPECT_EQ(tag.business_step(), 50);
  get.set_tag("nosuch");
  EXPECT_EQ(stub->GetTag(context(test::kAdminToken).get(), get, &tag).error_code(),
            grpc::StatusCode::NOT_FOUND);

  v1::ChangeTagRequest change;
  change.set_tag("orders");
  change.set_step(20);
  EXPECT_EQ(stub->ChangeTag(context(test::kOrdersToken).get(), change, &tag).error_code(),
            grpc::StatusCode::UNAUTHENTICATED);
  ASSERT_TRUE(stub->ChangeTag(context(test::kAdminToken).get(), change, &tag).ok());
  EXPECT_EQ(tag.business_step(), 20);
  EXPECT_EQ(tag.template_(), "ORD-{yyyyMMdd}-{seq:06}");  // unset: unchanged
  EXPECT_EQ(tag.zone(), "UTC");
  EXPECT_EQ(tag.version(), created_version + 1);
  // A template that could repeat a string of the old one is refused, as a
  // bad template (docs/segments.md's example).
  ASSERT_TRUE(create("ledger", "{yyMMdd}{seq:06}").ok());
  v1::ChangeTagRequest repeating;
  repeating.set_tag("ledger");
  repeating.set_template_("{yyMM}{seq:08}");
  EXPECT_EQ(stub->ChangeTag(context(test::kAdminToken).get(), repeating, &tag).error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);

  v1::RetireTagRequest retire;
  retire.set_tag("orders");
  EXPECT_EQ(stub->RetireTag(context(test::kOrdersToken).get(), retire, &tag).error_code(),
            grpc::StatusCode::UNAUTHENTICATED);
  ASSERT_TRUE(stub->RetireTag(context(test::kAdminToken).get(), retire, &tag).ok());
  EXPECT_TRUE(tag.retired());
  EXPECT_EQ(stub->RetireTag(context(test::kAdminToken).get(), retire, &tag).error_code(),
            grpc::StatusCode::FAILED_PRECONDITION);
}

}  // namespace
}  // namespace snowid
