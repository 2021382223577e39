// One ZooKeeper session over the C client library (libzookeeper_mt): opened
// and signed in (digest auth) before use, a deadline on every request, and
// the store's request counters. The session is what an ephemeral znode lives
// by; closing it (the destructor) removes them.
//
// Thread-safety: one caller at a time. The library's own threads call back
// into shared state that outlives a request that timed out.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "leased_claim.h"
#include "snowid/error.h"
#include "zookeeper_coordinator.h"

typedef struct _zhandle zhandle_t;  // NOLINT: the C library's name

namespace snowid::coord {

// What a request learned of a znode.
struct ZnodeStat {
  std::int32_t version = -1;
  std::int64_t ephemeral_owner = 0;  // the session that holds an ephemeral znode
  // Unix ms the znode was created, by the clock of the ensemble's leader.
  std::chrono::milliseconds created{0};
  // Unix ms the znode was last written, by the same clock.
  std::chrono::milliseconds modified{0};
};

struct Znode {
  std::string data;
  ZnodeStat stat;
};

// One operation of a multi(): all apply, or none.
struct ZnodeOp {
  enum class Kind { kCheck, kSet, kCreate, kDelete };
  Kind kind = Kind::kCheck;
  std::string path;
  std::string data;        // kSet, kCreate
  int version = -1;        // kCheck, kSet, kDelete: the expected version (-1: any)
  bool ephemeral = false;  // kCreate
};

// A request's outcome: the ZooKeeper result code (ZOK, ZNONODE, ...), or
// ZOPERATIONTIMEOUT when no answer came within the request timeout.
struct ZnodeAnswer {
  int code = 0;
  bool ok() const;
  // "path: <what the code means>", for messages.
  std::string describe(const std::string& path) const;
};

class ZooKeeperSession {
 public:
  // Connects to one of options.endpoints, waits for the session (at most
  // request_timeout per endpoint) and signs in if a user is set.
  static Result<std::unique_ptr<ZooKeeperSession>> open(const ZooKeeperOptions& options,
                                                        StoreCounters& counters);
  ~ZooKeeperSession();
  ZooKeeperSession(const ZooKeeperSession&) = delete;
  ZooKeeperSession& operator=(const ZooKeeperSession&) = delete;

  std::int64_t id() const { return id_; }
  // The session timeout the server granted.
  std::chrono::milliseconds timeout() const { return timeout_; }
  // False once the server expired the session or refused its credentials.
  bool usable() const;

  ZnodeAnswer get(const std::string& path, Znode* node);
  ZnodeAnswer exists(const std::string& path, ZnodeStat* stat);
  // Creates `path` (ZNODEEXISTS if it is there); private to the signed-in
  // user if one is set, unless `open_to_all`.
  ZnodeAnswer create(const std::string& path, const std::string& data, bool ephemeral,
                     bool open_to_all = false);
  ZnodeAnswer remove(const std::string& path, int version);
  ZnodeAnswer children(const std::string& path, std::vector<std::string>* names);
  // On success, `stats` has the new stat of each kSet and kCreate op (in op
  // order; a kCreate's version is 0). On failure the code is the first
  // failing op's, and `failed` (if given) is its index. A session that
  // expired or whose credentials were refused answers ZINVALIDSTATE without
  // a request (`failed`: ops.size()).
  ZnodeAnswer multi(const std::vector<ZnodeOp>& ops, std::vector<ZnodeStat>* stats,
                    std::size_t* failed = nullptr);

 private:
  struct Watch;  // the session state the library's watcher updates
  ZooKeeperSession(const ZooKeeperOptions& options, StoreCounters& counters);

  ZooKeeperOptions options_;
  StoreCounters& counters_;
  std::unique_ptr<Watch> watch_;
  zhandle_t* handle_ = nullptr;
  std::int64_t id_ = 0;
  std::chrono::milliseconds timeout_{0};
  bool private_acl_ = false;  // a user signed in
};

}  // namespace snowid::coord
