// A real redis-server started by a test: a free loopback port, its data in a
// temporary directory, append-only file with fsync on every write (as
// snowid's docs ask of production). The constructor waits (at most 10 s)
// until it answers PING; a server still running is killed at destruction.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "subprocess.h"

namespace snowid::test {

class RedisServer {
 public:
  // `extra` arguments go to redis-server after the defaults.
  explicit RedisServer(std::vector<std::string> extra = {});
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

}  // namespace snowid::test
