// A real redis-server started by a test: a free loopback port, its data in a
// temporary directory, append-only file with fsync on every write (as
// snowid's docs ask of production). The constructor waits (at most 10 s)
// until it answers PING; a server still running is killed at destruction.
// RedisSentinelSet: a primary, two replicas and three Sentinels, as
// operators run Redis with Sentinel.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "subprocess.h"

namespace snowid::test {

class RedisServer {
 public:
  // `extra` arguments go to redis-server after the defaults.
  explicit RedisServer(std::vector<std::string> extra = {});
  // A Sentinel (redis-server sentinel.conf --sentinel) monitoring the
  // primary at 127.0.0.1:`primary_port` as `master`.
  struct Sentinel {
    std::string master;
    int primary_port = 0;
    int quorum = 2;
    std::chrono::milliseconds down_after{1000};
    std::chrono::milliseconds failover_timeout{5000};
  };
  explicit RedisServer(const Sentinel& sentinel);
  ~RedisServer();
  RedisServer(const RedisServer&) = delete;
  RedisServer& operator=(const RedisServer&) = delete;

  // False if redis-server is missing or did not answer; why() says what happened.
  bool started() const { return pid_ > 0 && answered_; }
  const std::string& why() const { return why_; }

  int port() const { return port_; }
  pid_t pid() const { return pid_; }  // -1 while stopped
  std::string endpoint() const { return "127.0.0.1:" + std::to_string(port_); }

  // Runs redis-cli against the server; its output (stdout and stderr).
  std::string cli(const std::vector<std::string>& arguments) const;

  void kill();    // SIGKILL: a server that crashes
  void pause();   // SIGSTOP: a server that hangs
  void resume();  // SIGCONT
  // Starts a killed server again on its port and data; true once it answers.
  bool restart();
  // A backup as Redis's documentation describes one for append-only
  // persistence: automatic rewrites off, none in progress, the append-only
  // directory (its manifest, base and incremental files) copied into
  // `directory`, rewrites back on. "" if done, else what failed.
  std::string back_up(const std::string& directory) const;
  // Its restore: kills the server, puts the copy in place of its append-only
  // directory (what it loads at start) and starts it again on its port;
  // true once it answers.
  bool restore(const std::string& directory);
  std::string log() const;

 private:
  bool spawn();
  bool wait_until_answering();

  TempDir dir_;
  int port_ = 0;
  pid_t pid_ = -1;
  bool answered_ = false;
  std::vector<std::string> argv_;
  std::string why_;
};

// A primary, two replicas (--replicaof; all three with min-replicas-to-write
// 1) and three Sentinels monitoring them as kMaster (quorum 2,
// down-after-milliseconds 1000, failover-timeout 5000), all on loopback. The constructor waits (at
// most 20 s) until both replicas are in sync and every Sentinel knows both replicas and the two
// other Sentinels, so that a failover can start at once.
class RedisSentinelSet {
 public:
  static constexpr const char* kMaster = "snowid";

  RedisSentinelSet();
  bool started() const { return why_.empty(); }
  const std::string& why() const { return why_; }

  // The Sentinels, "127.0.0.1:P,127.0.0.1:Q,...".
  std::string sentinels_text() const;
  std::vector<std::string> sentinel_endpoints() const;
  RedisServer& sentinel(std::size_t i) { return *sentinels_[i]; }

  // The data server at `endpoint` ("127.0.0.1:P"), nullptr if none.
  RedisServer* server(const std::string& endpoint);
  // The primary the Sentinels were last seen to agree on.
  RedisServer& primary() { return *server(primary_); }
  // What Sentinel `i` names for kMaster now: "127.0.0.1:P", "" if nothing.
  std::string named_by(std::size_t i) const;

  // SIGKILL to the primary; its endpoint.
  std::string kill_primary();
  // Waits (at most `timeout`) until every Sentinel names one server other
  // than `old` and that server's ROLE is master, with the one other replica
  // following it; then primary() is that server. Its endpoint, "" if not.
  std::string wait_for_new_primary(const std::string& old, std::chrono::milliseconds timeout);
  // Diagnostics: the Sentinels' and the servers' logs, each cut to its end.
  std::string logs() const;

 private:
  std::vector<std::unique_ptr<RedisServer>> servers_;
  std::vector<std::unique_ptr<RedisServer>> sentinels_;
  std::string primary_;
  std::string why_;
};

}  // namespace snowid::test
