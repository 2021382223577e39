// Real etcd members started by a test: client and peer URLs on free loopback
// ports, data in a temporary directory, short election timeouts. The
// constructor waits (at most 20 s) until the cluster reports healthy; every
// member still running is killed at destruction.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "subprocess.h"

namespace snowid::test {

class EtcdCluster {
 public:
  explicit EtcdCluster(int members = 1);
  ~EtcdCluster();
  EtcdCluster(const EtcdCluster&) = delete;
  EtcdCluster& operator=(const EtcdCluster&) = delete;

  // False if etcd is missing or did not become healthy; why() says what happened.
  bool started() const { return started_; }
  const std::string& why() const { return why_; }

  std::string endpoint(int member) const;  // "127.0.0.1:<client port>"
  std::vector<std::string> endpoints() const;

  void stop(int member);    // SIGTERM, then SIGKILL after 5 s
  void kill(int member);    // SIGKILL: a member that crashes
  // The member that is the Raft leader now, or -1 if no running member names one.
  int leader() const;
  // Starts a stopped member again on its ports and data; true once healthy.
  bool restart(int member);
  // Several at once (a cluster without quorum needs them together).
  bool restart(const std::vector<int>& members);
  void pause(int member);   // SIGSTOP: a member that hangs
  void resume(int member);  // SIGCONT
  std::string log(int member) const;

 private:
  struct Member {
    pid_t pid = -1;
    int client_port = 0;
    int peer_port = 0;
    std::string log_path;
    std::vector<std::string> argv;
  };
  bool spawn(Member& member);
  bool healthy(const Member& member) const;

  TempDir dir_;
  std::vector<Member> members_;
  bool started_ = false;
  std::string why_;
};

}  // namespace snowid::test
