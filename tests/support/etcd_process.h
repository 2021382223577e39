// Real etcd members started by a test: client and peer URLs on free loopback
// ports, data in a temporary directory, short election timeouts. The
// constructor waits (at most 20 s) until the cluster reports healthy; every
// member still running is killed at destruction.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "certificates.h"
#include "subprocess.h"

namespace snowid::test {

class EtcdCluster {
 public:
  // With `tls`, clients must use TLS and present client_certificate();
  // tls_ca() verifies the members.
  explicit EtcdCluster(int members = 1, bool tls = false);
  ~EtcdCluster();
  EtcdCluster(const EtcdCluster&) = delete;
  EtcdCluster& operator=(const EtcdCluster&) = delete;

  // False if etcd is missing or did not become healthy; why() says what happened.
  bool started() const { return started_; }
  const std::string& why() const { return why_; }

  std::string endpoint(int member) const;  // "127.0.0.1:<client port>"
  std::vector<std::string> endpoints() const;
  // -1 while stopped.
  pid_t pid(int member) const { return members_[static_cast<std::size_t>(member)].pid; }

  void stop(int member);    // SIGTERM, then SIGKILL after 5 s
  void kill(int member);    // SIGKILL: a member that crashes
  // The member that is the Raft leader now, or -1 if no running member names one.
  int leader() const;
  // Starts a stopped member again on its ports and data; true once healthy.
  bool restart(int member);
  // Several at once (a cluster without quorum needs them together).
  bool restart(const std::vector<int>& members);
  // A one-member cluster's disk lost: kills the member, deletes its data
  // directory and starts it again empty (its leases and keys gone, its
  // revision back at 1); true once healthy.
  bool wipe(int member);
  // A backup as an operator takes one: `etcdctl snapshot save file` against
  // member 0. "" if done, else what failed.
  std::string snapshot(const std::string& file) const;
  // Its restore in a one-member cluster: stops the member, `etcdctl
  // snapshot restore`s `snapshot` into a fresh data directory under the
  // member's name, peer URL and cluster token, and starts the member again
  // on its ports (the keys, leases and revision of the snapshot; each lease
  // starts its TTL again); true once healthy.
  bool restore(int member, const std::string& snapshot);
  void pause(int member);   // SIGSTOP: a member that hangs
  void resume(int member);  // SIGCONT
  std::string log(int member) const;

  const std::string& tls_ca() const { return server_certificate_.cert; }
  const CertificateFiles& client_certificate() const { return client_certificate_; }

  // Writes snowid cluster `cluster`'s created marker as "0", as an operator
  // who knows the cluster is new to this etcd would, so that its first
  // nodes need not start lease_ttl + reserve_ahead ahead of the clock
  // (src/coord/etcd_claim.cc). "" if done, else what failed.
  std::string mark_new_cluster(const std::string& cluster);
  // `etcdctl del --prefix /snowid/`: every snowid key gone, leases alive.
  // "" if done, else what failed.
  std::string delete_snowid_keys();

  // Turns on etcd authentication with a root user and `user`, whose role may
  // read and write keys under `prefix` only. "" if done, else what failed.
  std::string enable_auth(const std::string& user, const std::string& password,
                          const std::string& prefix);

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
  std::string data_dir(int member) const;
  // Runs etcdctl against member 0; "" on success, else its output.
  std::string etcdctl(const std::vector<std::string>& arguments) const;

  TempDir dir_;
  bool tls_ = false;
  CertificateFiles server_certificate_;
  CertificateFiles client_certificate_;
  std::vector<Member> members_;
  std::string initial_cluster_;  // --initial-cluster, as a restore needs it
  std::string token_;            // --initial-cluster-token, likewise
  bool started_ = false;
  std::string why_;
};

}  // namespace snowid::test
