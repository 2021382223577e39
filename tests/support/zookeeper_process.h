// A real ZooKeeper ensemble started by a test (Debian's zookeeper package,
// run with java): each server on free loopback ports with its data in a
// temporary directory, tickTime 200 ms, sessions of up to 60 s, any number
// of connections per client address (a simulated fleet connects from one),
// the admin server off. The constructor waits (at most 30 s) until every server
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
  // -1 while stopped.
  pid_t pid(int server) const { return servers_[static_cast<std::size_t>(server)].pid; }

  void kill(int server);    // SIGKILL: a server that crashes
  void pause(int server);   // SIGSTOP: a server that hangs
  void resume(int server);  // SIGCONT
  // Starts a killed server again on its ports and data; true once it serves.
  bool restart(int server);
  // A server's disk lost: kills it, deletes its data (all but its myid)
  // and starts it again; true once it serves. For an ensemble of one.
  bool wipe(int server);
  // A backup as an operator takes one: the server's data directory (its
  // snapshots and transaction logs) copied into `directory` while it
  // serves. "" if done, else what failed.
  std::string back_up(int server, const std::string& directory) const;
  // Its restore: kills the server, puts the copy in place of its data
  // directory and starts it again on its ports; true once it serves. It
  // refuses a client that saw a later zxid than the copy holds until its own
  // passes it, and does not know the sessions opened after the copy. For
  // an ensemble of one (a member of a larger one syncs from its leader).
  bool restore(int server, const std::string& directory);
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
  std::string data_dir(int server) const;

  TempDir dir_;
  std::vector<Server> servers_;
  std::string java_;
  bool started_ = false;
  std::string why_;
};

}  // namespace snowid::test
