// The tokens file (access_tokens.h): what each token opens, the file's
// errors, a connection's proof, reloading, and the bounded call counts.
#include "access_tokens.h"

#include <gtest/gtest.h>
#include <spdlog/spdlog.h>

#include <atomic>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>
#include <vector>

#include "service_config.h"

namespace snowid::server {
namespace {

std::string write_file(const std::string& name, const std::string& text) {
  const std::string path = ::testing::TempDir() + "/access-tokens-" + name;
  std::ofstream(path, std::ios::trunc) << text;
  return path;
}

const char* const kTokens = R"([[token]]
name = "orders-svc"
token = "orders-secret"
tags = ["orders", "orders-eu"]

[[token]]
name = "ops"
token = "ops-secret"
admin = true

[[token]]
name = "ids"
token = "ids-secret"
snowflake = true
)";

TEST(TokenSet, EachTokenOpensItsOwnTagsAndNothingElse) {
  auto set = TokenSet::from_file(write_file("opens", kTokens));
  ASSERT_TRUE(set.ok()) << set.error().message;
  const AccessToken* orders = set->match("Bearer orders-secret");
  ASSERT_NE(orders, nullptr);
  EXPECT_EQ(orders->name, "orders-svc");
  EXPECT_TRUE(orders->allows(TokenScope::segment_tag("orders")));
  EXPECT_TRUE(orders->allows(TokenScope::segment_tag("orders-eu")));
  EXPECT_FALSE(orders->allows(TokenScope::segment_tag("payments")));
  EXPECT_FALSE(orders->allows(TokenScope::segment_tag("order")));
  EXPECT_FALSE(orders->allows(TokenScope::snowflake()));
  EXPECT_FALSE(orders->allows(TokenScope::admin()));
  EXPECT_TRUE(orders->allows(TokenScope::node()));

  const AccessToken* ops = set->match("bearer ops-secret");  // the scheme in any case
  ASSERT_NE(ops, nullptr);
  EXPECT_TRUE(ops->allows(TokenScope::segment_tag("payments")));
  EXPECT_TRUE(ops->allows(TokenScope::snowflake()));
  EXPECT_TRUE(ops->allows(TokenScope::admin()));

  const AccessToken* ids = set->match("Bearer ids-secret");
  ASSERT_NE(ids, nullptr);
  EXPECT_TRUE(ids->allows(TokenScope::snowflake()));
  EXPECT_FALSE(ids->allows(TokenScope::segment_tag("orders")));
  EXPECT_FALSE(ids->allows(TokenScope::admin()));

  EXPECT_EQ(set->match("Bearer orders-secre"), nullptr);
  EXPECT_EQ(set->match("Bearer orders-secretx"), nullptr);
  EXPECT_EQ(set->match("Basic orders-secret"), nullptr);
  EXPECT_EQ(set->match(std::nullopt), nullptr);
  EXPECT_TRUE(set->names_tag("orders-eu"));
  EXPECT_FALSE(set->names_tag("payments"));
}

// The example of docs/operations.md, "Tokens", is a file snowidd reads (its
// token_file pointed at a file of this test's).
TEST(TokenSet, TheDocumentedExampleReads) {
  std::ifstream doc(SNOWID_OPERATIONS_DOC);
  const std::string text(std::istreambuf_iterator<char>(doc), {});
  const auto begin = text.find("```toml\n[[token]]");
  ASSERT_NE(begin, std::string::npos) << "no [[token]] example in " << SNOWID_OPERATIONS_DOC;
  const auto end = text.find("```", begin + 7);
  std::string example = text.substr(begin + 8, end - begin - 8);
  const std::string documented_path = "/run/secrets/orders";
  const auto path_at = example.find(documented_path);
  ASSERT_NE(path_at, std::string::npos);
  example.replace(path_at, documented_path.size(), write_file("doc-secret", "orders-token\n"));
  auto set = TokenSet::from_file(write_file("doc-example", example));
  ASSERT_TRUE(set.ok()) << set.error().message;
  ASSERT_EQ(set->tokens().size(), 3u);
  const AccessToken* orders = set->match("Bearer orders-token");
  ASSERT_NE(orders, nullptr);
  EXPECT_TRUE(orders->allows(TokenScope::segment_tag("orders-eu")));
  EXPECT_FALSE(orders->allows(TokenScope::snowflake()));
}

TEST(TokenSet, TheOneBearerTokenIsAnAdminNamedDefault) {
  const TokenSet set = TokenSet::single("s3cret");
  const AccessToken* token = set.match("Bearer s3cret");
  ASSERT_NE(token, nullptr);
  EXPECT_EQ(token->name, "default");
  EXPECT_TRUE(token->allows(TokenScope::segment_tag("anything")));
  EXPECT_TRUE(token->allows(TokenScope::admin()));
}

// Each bad file is refused with one line that names tokens_file and says
// what is wrong.
TEST(TokenSet, BadFilesAreRefusedWithOneLineNamingTheOptionAndTheFault) {
  const std::string secret = write_file("secret", "from-a-file\n");
  const std::string empty_secret = write_file("empty-secret", "\n");
  struct Case {
    std::string text;
    std::string says;
  };
  const std::vector<Case> cases = {
      {"[[token]]\nname = \"a\"\ntoken = \"x\"\ntags = [\"t\"]\ntgas = [\"u\"]\n",
       "unknown key 'tgas'"},
      {"tokens = 1\n", "unknown key 'tokens'"},
      {"[[token]]\nname = \"a\"\ntoken = \"x\"\nadmin = true\n"
       "[[token]]\nname = \"a\"\ntoken = \"y\"\nadmin = true\n",
       "the name is taken"},
      {"[[token]]\nname = \"a\"\ntoken = \"x\"\nadmin = true\n"
       "[[token]]\nname = \"b\"\ntoken = \"x\"\nadmin = true\n",
       "the same token as a"},
      {"[[token]]\nname = \"a\"\ntoken = \"\"\nadmin = true\n", "the token is empty"},
      {"[[token]]\nname = \"a\"\ntoken_file = \"" + empty_secret + "\"\nadmin = true\n",
       "the token is empty"},
      {"[[token]]\nname = \"a\"\ntoken_file = \"/nonexistent/secret\"\nadmin = true\n",
       "not a readable file"},
      {"[[token]]\nname = \"a\"\ntoken = \"x\"\ntoken_file = \"" + secret + "\"\nadmin = true\n",
       "exactly one of token and token_file"},
      {"[[token]]\nname = \"a\"\nadmin = true\n", "exactly one of token and token_file"},
      {"[[token]]\ntoken = \"x\"\nadmin = true\n", "name is missing"},
      {"[[token]]\nname = \"a b\"\ntoken = \"x\"\nadmin = true\n", "must be 1 to 64"},
      {"[[token]]\nname = \"a\"\ntoken = \"x\"\n", "opens nothing"},
      {"[[token]]\nname = \"a\"\ntoken = \"x\"\ntags = []\n", "opens nothing"},
      {"[[token]]\nname = \"a\"\ntoken = \"x\"\ntags = [\"#own\"]\n", "'#' first"},
      {"[[token]]\nname = \"a\"\ntoken = \"x\"\nadmin = \"yes\"\n", "admin must be true or false"},
      {"[[token]]\nname = \"a\"\ntoken = \"x\"\ntags = \"orders\"\n", "tags must be a list"},
      {"", "holds no [[token]] entry"},
      {"[[token]\nname = \"a\"\n", "tokens_file "},  // TOML's own error, with line and column
  };
  for (std::size_t i = 0; i < cases.size(); ++i) {
    SCOPED_TRACE(cases[i].text);
    auto set = TokenSet::from_file(write_file("bad-" + std::to_string(i), cases[i].text));
    ASSERT_FALSE(set.ok());
    const std::string& message = set.error().message;
    EXPECT_EQ(message.rfind("tokens_file ", 0), 0u) << message;
    EXPECT_NE(message.find(cases[i].says), std::string::npos) << message;
    EXPECT_EQ(message.find('\n'), std::string::npos) << message;
    EXPECT_EQ(message.find("\"x\""), std::string::npos) << "a token shown: " << message;
  }
  auto missing = TokenSet::from_file(::testing::TempDir() + "/no-such-tokens-file");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().message.find("not a readable file"), std::string::npos);

  auto from_file =
      TokenSet::from_file(write_file("secret-file", "[[token]]\nname = \"a\"\ntoken_file = \"" +
                                                        secret + "\"\nsnowflake = true\n"));
  ASSERT_TRUE(from_file.ok()) << from_file.error().message;
  EXPECT_NE(from_file->match("Bearer from-a-file"), nullptr);
}

TEST(TokenSet, TokensFileIsNotGivenTogetherWithTheOneToken) {
  ServiceConfig config;
  config.tokens_file = "/etc/snowid/tokens.toml";
  config.bearer_token = "s3cret";
  Status both = load_token_file(config);
  ASSERT_FALSE(both.ok());
  EXPECT_NE(both.error().message.find("tokens_file and bearer_token"), std::string::npos);
  config.bearer_token.clear();
  config.token_file = write_file("one-token", "s3cret\n");
  both = load_token_file(config);
  ASSERT_FALSE(both.ok());
  EXPECT_NE(both.error().message.find("tokens_file and token_file"), std::string::npos);
}

// A connection keeps the name and digest of its token; a token changed
// under the same name, or removed, no longer matches it.
TEST(TokenSet, AConnectionsProofMatchesOnlyTheTokenItPresented) {
  auto before = TokenSet::from_file(write_file("proof-before", kTokens));
  ASSERT_TRUE(before.ok());
  const AccessToken* orders = before->match("Bearer orders-secret");
  ASSERT_NE(orders, nullptr);
  const TokenProof proof{orders->name, orders->digest};
  EXPECT_EQ(before->match(proof), orders);
  EXPECT_EQ(before->match(TokenProof{"ops", orders->digest}), nullptr);

  auto rotated = TokenSet::from_file(write_file(
      "proof-rotated",
      "[[token]]\nname = \"orders-svc\"\ntoken = \"orders-new\"\ntags = [\"orders\"]\n"));
  ASSERT_TRUE(rotated.ok());
  EXPECT_EQ(rotated->match(proof), nullptr);
  auto removed = TokenSet::from_file(write_file(
      "proof-removed", "[[token]]\nname = \"ops\"\ntoken = \"ops-secret\"\nadmin = true\n"));
  ASSERT_TRUE(removed.ok());
  EXPECT_EQ(removed->match(proof), nullptr);
}

TEST(TokenSource, AChangedFileReplacesTheTokensAndABrokenOneKeepsThem) {
  const std::string path = write_file("reload", kTokens);
  auto source = TokenSource::from_file(path);
  ASSERT_TRUE(source.ok()) << source.error().message;
  TokenSource& tokens = **source;
  EXPECT_TRUE(tokens.required());
  EXPECT_FALSE(tokens.reload()) << "an unchanged file is not read again";
  const auto first = tokens.current();

  write_file("reload",
             "[[token]]\nname = \"payments-svc\"\ntoken = \"payments-secret\"\n"
             "tags = [\"payments\"]\n");
  EXPECT_TRUE(tokens.reload());
  EXPECT_NE(tokens.current()->match("Bearer payments-secret"), nullptr);
  EXPECT_EQ(tokens.current()->match("Bearer orders-secret"), nullptr);
  // A reader holding the earlier set still reads it whole.
  EXPECT_NE(first->match("Bearer orders-secret"), nullptr);

  write_file("reload",
             "[[token]]\nname = \"payments-svc\"\ntoken = \"payments-secret\"\n"
             "tags = [\"payments\"]\nextra = 1\n");
  EXPECT_FALSE(tokens.reload());
  EXPECT_NE(tokens.current()->match("Bearer payments-secret"), nullptr)
      << "a broken file must leave the tokens in force";
  EXPECT_FALSE(tokens.reload()) << "a broken file is reported once, until it changes";

  std::remove(path.c_str());
  EXPECT_FALSE(tokens.reload());
  EXPECT_NE(tokens.current()->match("Bearer payments-secret"), nullptr)
      << "a removed file must leave the tokens in force, never none";
}

// Readers on many threads while the file is read again (ThreadSanitizer
// checks the swap in the sanitizer builds).
TEST(TokenSource, ReadersSeeOneWholeSetWhileTheFileIsReadAgain) {
  const std::string a = "[[token]]\nname = \"a\"\ntoken = \"secret-a\"\ntags = [\"t\"]\n";
  const std::string b = "[[token]]\nname = \"b\"\ntoken = \"secret-bb\"\ntags = [\"t\"]\n";
  const std::string path = write_file("concurrent", a);
  auto source = TokenSource::from_file(path);
  ASSERT_TRUE(source.ok());
  std::atomic<bool> stop{false};
  std::atomic<int> torn{0};
  std::vector<std::thread> readers;
  for (int r = 0; r < 3; ++r) {
    readers.emplace_back([&] {
      while (!stop.load()) {
        const auto set = (*source)->current();
        const bool has_a = set->match("Bearer secret-a") != nullptr;
        const bool has_b = set->match("Bearer secret-bb") != nullptr;
        if (has_a == has_b) torn.fetch_add(1);
      }
    });
  }
  const auto level = spdlog::get_level();
  spdlog::set_level(spdlog::level::warn);  // not 200 lines of "read again"
  for (int i = 0; i < 200; ++i) {
    write_file("concurrent", i % 2 == 0 ? b : a);
    (*source)->reload(true);
  }
  spdlog::set_level(level);
  stop = true;
  for (auto& reader : readers) reader.join();
  EXPECT_EQ(torn.load(), 0);
}

TEST(TokenCallCounts, RendersPerTokenAndTagAndStaysBounded) {
  TokenCallCounts counts;
  counts.count("orders-svc", "orders", true);
  counts.count("orders-svc", "orders", true);
  counts.count("orders-svc", "pay\"ments", false);
  std::string out;
  counts.render(out);
  EXPECT_NE(out.find("snowid_token_calls_total{token=\"orders-svc\",tag=\"orders\",outcome=\"ok\"} "
                     "2\n"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("tag=\"pay\\\"ments\",outcome=\"refused\"} 1\n"), std::string::npos) << out;

  for (std::size_t i = 0; i < TokenCallCounts::kMaxSeries + 500; ++i) {
    counts.count("#none", "tag-" + std::to_string(i), false);
  }
  out.clear();
  counts.render(out);
  std::size_t series = 0;
  for (std::size_t at = out.find("\nsnowid_token_calls_total{"); at != std::string::npos;
       at = out.find("\nsnowid_token_calls_total{", at + 1)) {
    ++series;
  }
  EXPECT_LE(series, TokenCallCounts::kMaxSeries + 1);
  // Two series before, kMaxSeries - 2 tags of their own: the other 502 under "#other".
  EXPECT_NE(out.find("{token=\"#none\",tag=\"#other\",outcome=\"refused\"} 502\n"),
            std::string::npos);
}

}  // namespace
}  // namespace snowid::server
