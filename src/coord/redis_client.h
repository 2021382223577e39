// A small synchronous Redis client over hiredis: one connection, failover
// between endpoints, AUTH and SELECT on every (re)connection, a deadline on
// every request, and the store's request counters.
//
// Thread-safety: one caller at a time (the leased coordinator's thread, or a
// CLI command).
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "leased_claim.h"
#include "redis_coordinator.h"
#include "snowid/error.h"

struct redisContext;

namespace snowid::coord {

// A reply, as a tree. Errors never appear here: they become an Error.
struct RedisReply {
  enum class Kind { kNil, kInteger, kText, kArray };
  Kind kind = Kind::kNil;
  long long integer = 0;
  std::string text;  // a bulk or status string
  std::vector<RedisReply> elements;

  bool is_nil() const { return kind == Kind::kNil; }
};

class RedisClient {
 public:
  // Checks the endpoints; connects lazily.
  static Result<std::unique_ptr<RedisClient>> connect(const RedisOptions& options);
  ~RedisClient();
  RedisClient(const RedisClient&) = delete;
  RedisClient& operator=(const RedisClient&) = delete;

  // One command, retried once on each other endpoint if the connection
  // fails or the server cannot take writes. kUnavailable if no endpoint
  // answered; a Redis error reply is kUnavailable with its text.
  Result<RedisReply> command(const std::vector<std::string>& argv);
  // EVAL of `script` with `keys` and `args`.
  Result<RedisReply> eval(const std::string& script, const std::vector<std::string>& keys,
                          const std::vector<std::string>& args);

  const StoreCounters& counters() const { return counters_; }
  // Connections opened so far: a WAIT covers only the writes sent on the
  // connection it runs on.
  std::uint64_t connections() const { return connections_; }

 private:
  explicit RedisClient(const RedisOptions& options);
  // Connects to endpoint `index`: AUTH, SELECT. "" on success, else why not.
  std::string open(std::size_t index);
  void close();

  RedisOptions options_;
  redisContext* context_ = nullptr;
  std::size_t current_ = 0;  // endpoint of context_, or the next to try
  std::uint64_t connections_ = 0;
  StoreCounters counters_;
};

}  // namespace snowid::coord
