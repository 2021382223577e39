// A real ZooKeeper ensemble started by a test (Debian's zookeeper package,
// run with java): each server on free loopback ports with its data in a
// temporary directory, tickTime 200 ms, sessions of up to 60 s, the admin
// server off. The constructor waits (at most 30 s) until every server
// serves; every server still running is killed at destruction.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <string>
#include <vector>

#include "subprocess.h"

namespace snowid::test {

class ZooKeeperEnsemble {
 public:
  static constexpr std::chrono::milliseconds kTickTime{200};

  explicit ZooKeeperEnsemble(int servers = 1);
  ~ZooKeeperEnsemble();
  ZooKeeperEnsemble(const ZooKeeperEnsemble&) = delete;
  ZooKeeperEnsemble& operator=(const ZooKeeperEnsemble&) = delete;

  // False if java or ZooKeeper is missing or a server did not come up;
  // why() says what happened.
  bool started() const { return started_; }
  const std::string& why() const { return why_; }

  std::string endpoint(int server) const;  // "127.0.0.1:<client port>"
  std::vector<std::string> endpoints() const;
  std::string endpoints_text() const;  // comma-separated

  void kill(int server);    // SIGKILL: a server that crashes
  void pause(int server);   // SIGSTOP: a server that hangs
  void resume(int server);  // SIGCONT
  // Starts a killed server again on its ports and data; true once it serves.
  bool restart(int server);
  // A server's disk lost: kills it, deletes its data (all but its myid)
  // and starts it again; true once it serves. For an ensemble of one.
  bool wipe(int server);
  std::string log(int server) const;

 private:
  struct Server {
    int client_port = 0;
    int quorum_port = 0;
    int election_port = 0;
    pid_t pid = -1;
    std::string config;
  };
  bool spawn(int server);
  // "srvr" answered with the server's mode: it serves requests.
  bool serving(int server) const;
  bool wait_until_serving(const std::vector<int>& servers);
  std::string log_path(int server) const;

  TempDir dir_;
  std::vector<Server> servers_;
  std::string java_;
  bool started_ = false;
  std::string why_;
};

}  // namespace snowid::test
