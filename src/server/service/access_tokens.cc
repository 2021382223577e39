#include "access_tokens.h"

#include <fmt/format.h>
#include <openssl/sha.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <toml++/toml.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>

#include "prometheus_text.h"
#include "service_config.h"
#include "snowid/segment_tag.h"

namespace snowid::server {

namespace {

constexpr std::size_t kMaxNameLength = 64;

// Whether the presented token equals the secret, in a time that depends on
// the presented token's length alone: neither the secret's bytes nor its
// length show in how long a refusal takes (a length check first would tell
// a caller the token's length).
bool constant_time_equal(std::string_view presented, std::string_view secret) {
  if (secret.empty()) return false;  // an empty token is refused when read
  std::size_t diff = presented.size() ^ secret.size();
  for (std::size_t i = 0; i < presented.size(); ++i) {
    diff |= static_cast<unsigned char>(presented[i] ^ secret[i % secret.size()]);
  }
  return diff == 0;
}

// The token after "Bearer " (the scheme name in any case, RFC 9110 11.1);
// nullopt for another scheme or none.
std::optional<std::string_view> bearer_token(std::optional<std::string_view> authorization) {
  constexpr std::string_view kScheme = "bearer ";
  if (!authorization || authorization->size() < kScheme.size()) return std::nullopt;
  for (std::size_t i = 0; i < kScheme.size(); ++i) {
    const char c = (*authorization)[i];
    if ((c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c) != kScheme[i]) {
      return std::nullopt;
    }
  }
  return authorization->substr(kScheme.size());
}

bool valid_name(std::string_view name) {
  if (name.empty() || name.size() > kMaxNameLength) return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
           c == '_' || c == '-';
  });
}

// One [[token]] entry, checked; `where` names it in errors.
Result<AccessToken> read_entry(const toml::table& entry, const std::string& where) {
  static const std::set<std::string, std::less<>> kKeys = {"name", "token",     "token_file",
                                                           "tags", "snowflake", "admin"};
  for (const auto& [key, value] : entry) {
    if (kKeys.count(key.str()) == 0) {
      return invalid_argument(fmt::format(
          "{}: unknown key '{}' (expected name, token or token_file, tags, snowflake, admin)",
          where, key.str().substr(0, 40)));
    }
  }
  AccessToken token;
  const auto* name = entry.get_as<std::string>("name");
  if (name == nullptr) return invalid_argument(fmt::format("{}: name is missing", where));
  if (!valid_name(name->get())) {
    return invalid_argument(fmt::format("{}: name '{}' must be 1 to 64 of [A-Za-z0-9._-]", where,
                                        name->get().substr(0, 70)));
  }
  token.name = name->get();
  const std::string named = fmt::format("{} ({})", where, token.name);
  const auto* secret = entry.get("token");
  const auto* secret_file = entry.get("token_file");
  if ((secret == nullptr) == (secret_file == nullptr)) {
    return invalid_argument(fmt::format("{}: give exactly one of token and token_file", named));
  }
  if (secret != nullptr) {
    if (!secret->is_string()) return invalid_argument(named + ": token must be a string");
    token.secret = secret->as_string()->get();
  } else {
    if (!secret_file->is_string()) return invalid_argument(named + ": token_file must be a string");
    auto read = read_token_file(secret_file->as_string()->get());
    if (!read.ok()) return invalid_argument(fmt::format("{}: {}", named, read.error().message));
    token.secret = std::move(*read);
  }
  if (token.secret.empty()) return invalid_argument(named + ": the token is empty");
  for (const char* flag : {"snowflake", "admin"}) {
    const auto* value = entry.get(flag);
    if (value == nullptr) continue;
    if (!value->is_boolean()) {
      return invalid_argument(fmt::format("{}: {} must be true or false", named, flag));
    }
    (std::string_view(flag) == "admin" ? token.admin : token.snowflake) =
        value->as_boolean()->get();
  }
  if (const auto* tags = entry.get("tags")) {
    const auto* list = tags->as_array();
    if (list == nullptr) return invalid_argument(named + ": tags must be a list of strings");
    for (const auto& tag : *list) {
      const auto* text = tag.as_string();
      if (text == nullptr) return invalid_argument(named + ": tags must be a list of strings");
      if (Status valid = validate_segment_tag(text->get()); !valid.ok()) {
        return invalid_argument(fmt::format("{}: {}", named, valid.error().message));
      }
      token.tags.push_back(text->get());
    }
  }
  std::sort(token.tags.begin(), token.tags.end());
  token.tags.erase(std::unique(token.tags.begin(), token.tags.end()), token.tags.end());
  if (!token.admin && !token.snowflake && token.tags.empty()) {
    return invalid_argument(named +
                            ": opens nothing (give tags, snowflake = true or admin = true)");
  }
  token.digest = token_digest(token.secret);
  return token;
}

}  // namespace

TokenDigest token_digest(std::string_view secret) {
  TokenDigest digest{};
  SHA256(reinterpret_cast<const unsigned char*>(secret.data()), secret.size(), digest.data());
  return digest;
}

bool AccessToken::allows(const TokenScope& scope) const {
  switch (scope.kind) {
    case TokenScope::Kind::kNode:
      return true;
    case TokenScope::Kind::kSnowflake:
      return admin || snowflake;
    case TokenScope::Kind::kTag:
      return admin || std::binary_search(tags.begin(), tags.end(), scope.tag);
    case TokenScope::Kind::kAdmin:
      return admin;
  }
  return false;
}

TokenSet TokenSet::single(std::string secret) {
  TokenSet set;
  AccessToken token;
  token.name = "default";
  token.digest = token_digest(secret);
  token.secret = std::move(secret);
  token.admin = true;
  set.tokens_.push_back(std::move(token));
  return set;
}

Result<TokenSet> TokenSet::from_file(const std::string& path) {
  const std::string file = "tokens_file " + path;
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) {
    return invalid_argument(file + ": not a readable file");
  }
  if (std::ifstream probe(path); !probe) return invalid_argument(file + ": cannot be read");
  toml::table table;
  try {
    table = toml::parse_file(path);
  } catch (const toml::parse_error& e) {
    const auto& at = e.source().begin;
    return invalid_argument(fmt::format("{}:{}:{}: {}", file, at.line, at.column, e.description()));
  }
  for (const auto& [key, value] : table) {
    if (key.str() != "token") {
      return invalid_argument(fmt::format("{}: unknown key '{}' (expected [[token]] entries)", file,
                                          key.str().substr(0, 40)));
    }
  }
  const auto* entries = table.get_as<toml::array>("token");
  if (entries == nullptr || entries->empty()) {
    return invalid_argument(file + ": holds no [[token]] entry");
  }
  TokenSet set;
  for (std::size_t i = 0; i < entries->size(); ++i) {
    const std::string where = fmt::format("{}: [[token]] {}", file, i + 1);
    const auto* entry = (*entries)[i].as_table();
    if (entry == nullptr) return invalid_argument(where + ": not a table");
    auto token = read_entry(*entry, where);
    if (!token.ok()) return token.error();
    for (const AccessToken& earlier : set.tokens_) {
      if (earlier.name == token->name) {
        return invalid_argument(
            fmt::format("{} ({}): the name is taken by an earlier token", where, token->name));
      }
      if (earlier.secret == token->secret) {
        return invalid_argument(
            fmt::format("{} ({}): the same token as {}", where, token->name, earlier.name));
      }
    }
    set.tags_.insert(set.tags_.end(), token->tags.begin(), token->tags.end());
    set.tokens_.push_back(std::move(*token));
  }
  std::sort(set.tags_.begin(), set.tags_.end());
  set.tags_.erase(std::unique(set.tags_.begin(), set.tags_.end()), set.tags_.end());
  return set;
}

const AccessToken* TokenSet::match(std::optional<std::string_view> authorization) const {
  const auto presented = bearer_token(authorization);
  if (!presented) return nullptr;
  // Every token compared, whichever matched: no early exit.
  const AccessToken* found = nullptr;
  for (const AccessToken& token : tokens_) {
    const bool equal = constant_time_equal(*presented, token.secret);
    found = equal ? &token : found;
  }
  return found;
}

const AccessToken* TokenSet::match(const TokenProof& proof) const {
  for (const AccessToken& token : tokens_) {
    if (token.name == proof.name) return token.digest == proof.digest ? &token : nullptr;
  }
  return nullptr;
}

bool TokenSet::names_tag(std::string_view tag) const {
  return std::binary_search(tags_.begin(), tags_.end(), tag);
}

TokenSource::TokenSource(std::string secret)
    : required_(true),
      current_(std::make_shared<const TokenSet>(TokenSet::single(std::move(secret)))) {}

Result<std::unique_ptr<TokenSource>> TokenSource::from_file(const std::string& path) {
  auto source = std::make_unique<TokenSource>();
  source->path_ = path;
  source->required_ = true;
  source->read_ = identify(path);
  auto set = TokenSet::from_file(path);
  if (!set.ok()) return set.error();
  source->current_ = std::make_shared<const TokenSet>(std::move(*set));
  return source;
}

TokenSource::FileIdentity TokenSource::identify(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return {};
  return {static_cast<std::uint64_t>(st.st_dev), static_cast<std::uint64_t>(st.st_ino),
          static_cast<std::int64_t>(st.st_size),
          static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec};
}

bool TokenSource::reload(bool force) {
  if (path_.empty()) return false;
  std::lock_guard lock(reload_mutex_);
  const FileIdentity now = identify(path_);
  if (!force && now == read_) return false;
  read_ = now;
  auto set = TokenSet::from_file(path_);
  if (!set.ok()) {
    spdlog::error("{}; the tokens read before stay in force", set.error().message);
    return false;
  }
  const std::size_t count = set->tokens().size();
  {
    std::lock_guard publish(current_mutex_);
    current_ = std::make_shared<const TokenSet>(std::move(*set));
  }
  spdlog::info("tokens_file {}: read again, {} tokens in force", path_, count);
  return true;
}

void TokenCallCounts::count(std::string_view token, std::string_view tag, bool ok) {
  std::lock_guard lock(mutex_);
  const auto key = std::make_tuple(token, tag, ok);
  if (auto found = counts_.find(key); found != counts_.end()) {
    ++found->second;
    return;
  }
  if (counts_.size() >= kMaxSeries) tag = "#other";
  ++counts_[{std::string(token), std::string(tag), ok}];
}

void TokenCallCounts::render(std::string& out) const {
  std::lock_guard lock(mutex_);
  if (counts_.empty()) return;
  out +=
      "# HELP snowid_token_calls_total Calls checked against the tokens, by token name, tag and "
      "outcome (never the token itself).\n# TYPE snowid_token_calls_total counter\n";
  for (const auto& [key, count] : counts_) {
    const auto& [token, tag, ok] = key;
    fmt::format_to(std::back_inserter(out),
                   "snowid_token_calls_total{{token=\"{}\",tag=\"{}\",outcome=\"{}\"}} {}\n",
                   prometheus_label_value(token), prometheus_label_value(tag),
                   ok ? "ok" : "refused", count);
  }
}

}  // namespace snowid::server
