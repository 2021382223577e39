// Who may ask for what: the tokens snowidd accepts and what each opens.
//
// One token (bearer_token or token_file) opens everything, as it always
// has: it is an admin token named "default". A tokens file (tokens_file)
// gives several, each with a name and what it opens (docs/operations.md,
// "Tokens"):
//
//   [[token]]
//   name = "orders-svc"              # [A-Za-z0-9._-], at most 64
//   token_file = "/run/secrets/orders"   # or token = "..."; exactly one
//   tags = ["orders", "orders-eu"]   # segment tags it may draw numbers of
//   snowflake = false                # Snowflake IDs (and UUIDv7, ULID,
//                                    # ObjectId, opaque IDs); default false
//   admin = false                    # every tag, Snowflake IDs, and the
//                                    # pages listing every tag (/cache, /db)
//
// A token opens the calls that name none of this (info, decode) whatever it
// holds; a token that opens nothing else is refused when the file is read.
//
// A presented token is compared with every token in constant time, with no
// early exit: how long a refusal takes tells neither which token came close
// nor their lengths. A connection that authenticated (RESP's AUTH, Thrift's
// authenticate) keeps the token's name and a SHA-256 digest of what it
// presented (TokenProof), and every request it sends is checked against the
// tokens in force then: a token removed or changed in the file is refused
// at the connection's next request.
//
// TokenSet is immutable, so any thread may read one. TokenSource holds the
// current set and replaces it as a whole when the file changes.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "caller.h"
#include "snowid/error.h"

namespace snowid::server {

// What a call asks access to.
struct TokenScope {
  enum class Kind {
    kNode,       // info, decode, and HTTP's check before a route reads its request
    kSnowflake,  // Snowflake IDs and the formats made from them
    kTag,        // one segment tag's numbers
    kAdmin,      // what lists every tag (/cache, /db)
  };
  Kind kind = Kind::kNode;
  std::string_view tag;  // kTag only

  static TokenScope node() { return {Kind::kNode, {}}; }
  static TokenScope snowflake() { return {Kind::kSnowflake, {}}; }
  static TokenScope segment_tag(std::string_view tag) { return {Kind::kTag, tag}; }
  static TokenScope admin() { return {Kind::kAdmin, {}}; }
};

struct AccessToken {
  std::string name;
  std::string secret;
  TokenDigest digest{};  // SHA-256 of secret
  bool admin = false;
  bool snowflake = false;
  std::vector<std::string> tags;  // sorted

  bool allows(const TokenScope& scope) const;
};

// SHA-256 of `secret`.
TokenDigest token_digest(std::string_view secret);

class TokenSet {
 public:
  // The one token of bearer_token: an admin named "default".
  static TokenSet single(std::string secret);
  // The tokens of a tokens file (the header's format). kInvalidArgument
  // with one line naming tokens_file, the file and the entry: a file that
  // cannot be read or parsed, an unknown key, a name missing, malformed or
  // repeated, a token missing, empty, given twice (token and token_file) or
  // repeated, a tag no segment tag can be, a token that opens nothing, or
  // no token at all.
  static Result<TokenSet> from_file(const std::string& path);

  const std::vector<AccessToken>& tokens() const { return tokens_; }
  // The token `authorization` ("Bearer <token>", the scheme in any case)
  // presents, compared with every token; null if none.
  const AccessToken* match(std::optional<std::string_view> authorization) const;
  // The token named proof.name whose digest is proof.digest; null if none.
  const AccessToken* match(const TokenProof& proof) const;
  // Whether some token names `tag` among its tags.
  bool names_tag(std::string_view tag) const;

 private:
  std::vector<AccessToken> tokens_;
  std::vector<std::string> tags_;  // every token's tags, sorted, unique
};

// The tokens in force: none (no token required), one, or a tokens file's,
// reloaded when it changes. Thread-safe.
class TokenSource {
 public:
  // No token required.
  TokenSource() = default;
  // The one token `secret` (bearer_token).
  explicit TokenSource(std::string secret);
  // The tokens of `path` (tokens_file): kInvalidArgument as TokenSet::from_file.
  static Result<std::unique_ptr<TokenSource>> from_file(const std::string& path);

  // The current tokens; null while none is required.
  std::shared_ptr<const TokenSet> current() const {
    std::lock_guard lock(current_mutex_);
    return current_;
  }
  bool required() const { return required_; }
  // The tokens file; empty without one.
  const std::string& path() const { return path_; }

  // Reads the tokens file again if its inode, size or modification time
  // changed since it was last read (or, with `force`, whatever they are).
  // A file that reads keeps its tokens in force from then on (logged, with
  // the count); one that does not leaves the previous ones in force and
  // logs one error line, once per change of the file. True if replaced.
  bool reload(bool force = false);

 private:
  struct FileIdentity {
    std::uint64_t device = 0;
    std::uint64_t inode = 0;
    std::int64_t size = -1;
    std::int64_t modified_ns = 0;
    bool operator==(const FileIdentity&) const = default;
  };
  static FileIdentity identify(const std::string& path);

  std::string path_;
  bool required_ = false;
  // A mutex, not std::atomic<std::shared_ptr>: libstdc++ 12 guards that one
  // with a lock bit ThreadSanitizer does not see, and the copy under a mutex
  // is as cheap where it matters (one per request).
  mutable std::mutex current_mutex_;
  std::shared_ptr<const TokenSet> current_;
  std::mutex reload_mutex_;
  FileIdentity read_;  // under reload_mutex_: what the last read (or attempt) saw
};

// Calls and refusals per token name and tag, for /metrics. Label values
// are bounded: a token's name (from the file), "#none" for a caller with
// no valid token, "#trusted" for a trusted network's; the tag as given by
// the caller (IdService passes tags the store or the file knows, and
// "#other" for the rest), or "#snowflake", "#node", "#admin" for calls that
// name no tag ('#' starts no segment tag). At most kMaxSeries series; calls
// beyond them count under tag "#other". Thread-safe.
class TokenCallCounts {
 public:
  static constexpr std::size_t kMaxSeries = 10000;

  void count(std::string_view token, std::string_view tag, bool ok);
  // Appends snowid_token_calls_total in Prometheus' text format.
  void render(std::string& out) const;

 private:
  // Orders series keys (token, tag, outcome), held as strings and looked up
  // as views, by comparing both as views: libstdc++'s tuple ordering across
  // element types is not one every compiler accepts.
  struct SeriesOrder {
    using is_transparent = void;
    template <typename A, typename B>
    bool operator()(const A& a, const B& b) const {
      return as_views(a) < as_views(b);
    }
    template <typename Key>
    static std::tuple<std::string_view, std::string_view, bool> as_views(const Key& key) {
      return {std::get<0>(key), std::get<1>(key), std::get<2>(key)};
    }
  };

  mutable std::mutex mutex_;
  std::map<std::tuple<std::string, std::string, bool>, std::uint64_t, SeriesOrder> counts_;
};

}  // namespace snowid::server
