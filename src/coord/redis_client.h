// A small synchronous Redis client over hiredis: one connection, failover
// between endpoints (or to the primary Redis Sentinel names), AUTH and SELECT
// on every (re)connection, a deadline on every request, and the store's
// request counters.
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

// Where a RedisClient sends its commands: which server each try of a
// command connects to. A fixed list of endpoints (redis_client.cc), or the
// primary the Sentinels name (redis_sentinel.h). Called only by the client's
// one caller.
class RedisRoute {
 public:
  virtual ~RedisRoute() = default;
  // "host:port" of the server for try `attempt` (0, 1, ...) of a command
  // begun at `begun`, when the client has no connection; an Error once no
  // try is left, whose message (if any) says why.
  virtual Result<std::string> server(std::size_t attempt,
                                     std::chrono::steady_clock::time_point begun) = 0;
  // `server` failed a try: no connection, an I/O error, READONLY, LOADING,
  // MASTERDOWN, NOREPLICAS, or (primary_only()) a role other than master.
  virtual void failed(const std::string& server) = 0;
  // True: a new connection serves only once ROLE answers "master".
  virtual bool primary_only() const = 0;
};

// One RESP connection to `endpoint` ("host:port", "[v6]:port") whose
// connect and every request time out after `timeout`; nullptr with `*why`
// set if it cannot be opened. The caller frees it (redisFree).
redisContext* redis_connect(const std::string& endpoint, std::chrono::milliseconds timeout,
                            std::string* why);
// One request on `context`; an I/O error or an error reply is kUnavailable
// with its text.
Result<RedisReply> redis_request(redisContext* context, const std::vector<std::string>& argv);

class RedisClient {
 public:
  // Checks the endpoints (or the Sentinels and the master name); connects
  // lazily.
  static Result<std::unique_ptr<RedisClient>> connect(const RedisOptions& options);
  ~RedisClient();
  RedisClient(const RedisClient&) = delete;
  RedisClient& operator=(const RedisClient&) = delete;

  // One command, tried again on another server (the route's next) if the
  // connection fails or the server cannot take writes. kUnavailable if no
  // server answered; a Redis error reply is kUnavailable with its text.
  Result<RedisReply> command(const std::vector<std::string>& argv);
  // EVAL of `script` with `keys` and `args`.
  Result<RedisReply> eval(const std::string& script, const std::vector<std::string>& keys,
                          const std::vector<std::string>& args);

  const StoreCounters& counters() const { return counters_; }
  // Connections opened so far: a WAIT covers only the writes sent on the
  // connection it runs on.
  std::uint64_t connections() const { return connections_; }

 private:
  RedisClient(const RedisOptions& options, std::unique_ptr<RedisRoute> route);
  // Connects to `endpoint`: AUTH, SELECT, and ROLE if the route asks for a
  // primary. "" on success, else why not.
  std::string open(const std::string& endpoint);
  void close();

  RedisOptions options_;
  std::unique_ptr<RedisRoute> route_;
  redisContext* context_ = nullptr;
  std::string server_;  // the server of context_, or the one last tried
  std::uint64_t connections_ = 0;
  StoreCounters counters_;
};

}  // namespace snowid::coord
