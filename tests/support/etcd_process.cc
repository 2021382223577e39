#include "etcd_process.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <random>
#include <thread>

#include "certificates.h"
#include "orphan_guard.h"
#include "server_process.h"

extern char** environ;

namespace snowid::test {
namespace {

std::string url(int port) { return "http://127.0.0.1:" + std::to_string(port); }

}  // namespace

EtcdCluster::EtcdCluster(int members, bool tls) : tls_(tls) {
  const std::string binary = find_program("etcd");
  if (binary.empty()) {
    why_ = "etcd is not on PATH (Debian: apt-get install etcd-server)";
    return;
  }
  const std::vector<int> ports = free_loopback_ports(2 * members);
  for (int i = 0; i < members; ++i) {
    Member m;
    m.client_port = ports[static_cast<std::size_t>(2 * i)];
    m.peer_port = ports[static_cast<std::size_t>(2 * i + 1)];
    m.log_path = dir_.file("m" + std::to_string(i) + ".log");
    if (!initial_cluster_.empty()) initial_cluster_ += ",";
    initial_cluster_ += "m" + std::to_string(i) + "=" + url(m.peer_port);
    members_.push_back(m);
  }
  if (tls_) {
    server_certificate_ = make_self_signed_certificate(dir_.path(), "etcd-server");
    client_certificate_ = make_self_signed_certificate(dir_.path(), "etcd-client", "snowid");
  }
  token_ = "snowid-test-" + std::to_string(std::random_device{}());
  for (int i = 0; i < members; ++i) {
    Member& m = members_[static_cast<std::size_t>(i)];
    const std::string name = "m" + std::to_string(i);
    const std::string client_url =
        (tls_ ? "https://127.0.0.1:" : "http://127.0.0.1:") + std::to_string(m.client_port);
    std::vector<std::string> argv = {binary,
                                     "--name", name,
                                     "--data-dir", data_dir(i),
                                     "--listen-client-urls", client_url,
                                     "--advertise-client-urls", client_url,
                                     "--listen-peer-urls", url(m.peer_port),
                                     "--initial-advertise-peer-urls", url(m.peer_port),
                                     "--initial-cluster", initial_cluster_,
                                     "--initial-cluster-state", "new",
                                     "--initial-cluster-token", token_,
                                     "--heartbeat-interval", "50",
                                     "--election-timeout", "500",
                                     "--auth-token-ttl", "2",
                                     "--logger", "zap",
                                     "--log-level", "warn"};
    if (tls_) {
      for (const std::string& flag :
           {"--cert-file=" + server_certificate_.cert, "--key-file=" + server_certificate_.key,
            std::string("--client-cert-auth"), "--trusted-ca-file=" + client_certificate_.cert}) {
        argv.push_back(flag);
      }
    }
    m.argv = std::move(argv);
    if (!spawn(m)) {
      why_ = "cannot start " + binary;
      return;
    }
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds{20};
  while (std::chrono::steady_clock::now() < deadline) {
    bool all = true;
    for (const Member& m : members_) all = all && healthy(m);
    if (all) {
      started_ = true;
      return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds{50});
  }
  why_ = "etcd did not become healthy within 20 s; log of m0:\n" + log(0);
}

bool EtcdCluster::spawn(Member& m) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 1, m.log_path.c_str(),
                                   O_WRONLY | O_CREAT | O_APPEND, 0600);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  std::vector<char*> args;
  for (auto& a : m.argv) args.push_back(a.data());
  args.push_back(nullptr);
  const int rc = posix_spawn(&m.pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) m.pid = -1;
  if (rc == 0) watch_child(m.pid);
  return rc == 0;
}

bool EtcdCluster::restart(int member) { return restart(std::vector<int>{member}); }

bool EtcdCluster::restart(const std::vector<int>& members) {
  for (int member : members) {
    Member& m = members_.at(static_cast<std::size_t>(member));
    if (m.pid > 0 || !spawn(m)) return false;
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds{20};
  while (std::chrono::steady_clock::now() < deadline) {
    bool all = true;
    for (int member : members) all = all && healthy(members_[static_cast<std::size_t>(member)]);
    if (all) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds{50});
  }
  return false;
}

bool EtcdCluster::wipe(int member) {
  kill(member);
  std::error_code ec;
  std::filesystem::remove_all(data_dir(member), ec);
  return !ec && restart(member);
}

std::string EtcdCluster::snapshot(const std::string& file) const {
  return etcdctl({"snapshot", "save", file});
}

bool EtcdCluster::restore(int member, const std::string& snapshot) {
  stop(member);
  std::error_code ec;
  std::filesystem::remove_all(data_dir(member), ec);  // restore wants a new directory
  const Member& m = members_.at(static_cast<std::size_t>(member));
  const std::string restored = etcdctl(
      {"snapshot", "restore", snapshot, "--name", "m" + std::to_string(member), "--data-dir",
       data_dir(member), "--initial-cluster", initial_cluster_, "--initial-cluster-token", token_,
       "--initial-advertise-peer-urls", url(m.peer_port)});
  return !ec && restored.empty() && restart(member);
}

std::string EtcdCluster::data_dir(int member) const {
  return dir_.file("m" + std::to_string(member) + ".data");
}

EtcdCluster::~EtcdCluster() {
  for (std::size_t i = 0; i < members_.size(); ++i) {
    Member& m = members_[i];
    if (m.pid <= 0) continue;
    ::kill(m.pid, SIGKILL);
    reap_child(m.pid, nullptr, 0);
    m.pid = -1;
  }
}

bool EtcdCluster::healthy(const Member& member) const {
  if (tls_) {
    const ProcessResult reply = run_process(
        {"/usr/bin/curl", "-s", "--max-time", "2", "--cacert", server_certificate_.cert, "--cert",
         client_certificate_.cert, "--key", client_certificate_.key,
         "https://127.0.0.1:" + std::to_string(member.client_port) + "/health"});
    return reply.exit_code == 0 && reply.out.find("\"true\"") != std::string::npos;
  }
  const HttpReply reply = http_get(member.client_port, "/health");
  return reply.status == 200 && reply.body.find("\"true\"") != std::string::npos;
}

std::string EtcdCluster::etcdctl(const std::vector<std::string>& arguments) const {
  const std::string binary = find_program("etcdctl");
  if (binary.empty()) return "etcdctl is not on PATH (Debian: apt-get install etcd-client)";
  std::vector<std::string> argv{binary, "--endpoints=" + endpoint(0)};
  if (tls_) {
    argv.insert(argv.end(), {"--cacert=" + server_certificate_.cert,
                             "--cert=" + client_certificate_.cert,
                             "--key=" + client_certificate_.key});
  }
  argv.insert(argv.end(), arguments.begin(), arguments.end());
  const ProcessResult r = run_process(argv, {{"ETCDCTL_API", "3"}});
  return r.exit_code == 0 ? "" : "etcdctl failed: " + r.out + r.err;
}

std::string EtcdCluster::mark_new_cluster(const std::string& cluster) {
  return etcdctl({"put", "/snowid/" + cluster + "/created", "0"});
}

std::string EtcdCluster::delete_snowid_keys() { return etcdctl({"del", "--prefix", "/snowid/"}); }

std::string EtcdCluster::enable_auth(const std::string& user, const std::string& password,
                                     const std::string& prefix) {
  const std::vector<std::vector<std::string>> steps{
      {"user", "add", "root:root-" + password},
      {"role", "add", "root"},
      {"user", "grant-role", "root", "root"},
      {"role", "add", user},
      {"role", "grant-permission", user, "--prefix=true", "readwrite", prefix},
      {"user", "add", user + ":" + password},
      {"user", "grant-role", user, user},
      {"auth", "enable"}};
  for (const auto& step : steps) {
    std::string failed = etcdctl(step);
    if (!failed.empty()) return failed;
  }
  return "";
}

std::string EtcdCluster::endpoint(int member) const {
  return "127.0.0.1:" + std::to_string(members_.at(static_cast<std::size_t>(member)).client_port);
}

std::vector<std::string> EtcdCluster::endpoints() const {
  std::vector<std::string> all;
  for (std::size_t i = 0; i < members_.size(); ++i) all.push_back(endpoint(static_cast<int>(i)));
  return all;
}

void EtcdCluster::stop(int member) {
  Member& m = members_.at(static_cast<std::size_t>(member));
  if (m.pid <= 0) return;
  ::kill(m.pid, SIGCONT);
  ::kill(m.pid, SIGTERM);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds{5};
  while (reap_child(m.pid, nullptr, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() > deadline) {
      ::kill(m.pid, SIGKILL);
      reap_child(m.pid, nullptr, 0);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds{10});
  }
  m.pid = -1;
}

void EtcdCluster::kill(int member) {
  Member& m = members_.at(static_cast<std::size_t>(member));
  if (m.pid <= 0) return;
  ::kill(m.pid, SIGKILL);
  reap_child(m.pid, nullptr, 0);
  m.pid = -1;
}

int EtcdCluster::leader() const {
  // etcd's JSON gateway: POST /v3/maintenance/status answers with this
  // member's id (header.member_id) and the leader's id (leader).
  std::map<std::string, int> index_of;
  std::string leader;
  for (std::size_t i = 0; i < members_.size(); ++i) {
    if (members_[i].pid <= 0) continue;
    const HttpReply reply = http_raw(members_[i].client_port,
                                     "POST /v3/maintenance/status HTTP/1.1\r\nHost: etcd\r\n"
                                     "Content-Type: application/json\r\nContent-Length: 2\r\n"
                                     "Connection: close\r\n\r\n{}",
                                     std::chrono::milliseconds{2000});
    const std::string member_id = digits_after(reply.body, "\"member_id\":\"");
    if (reply.status != 200 || member_id.empty()) continue;
    index_of[member_id] = static_cast<int>(i);
    const std::string leader_id = digits_after(reply.body, "\"leader\":\"");
    if (!leader_id.empty()) leader = leader_id;
  }
  const auto found = index_of.find(leader);
  return found == index_of.end() ? -1 : found->second;
}

void EtcdCluster::pause(int member) {
  const Member& m = members_.at(static_cast<std::size_t>(member));
  if (m.pid > 0) ::kill(m.pid, SIGSTOP);
}

void EtcdCluster::resume(int member) {
  const Member& m = members_.at(static_cast<std::size_t>(member));
  if (m.pid > 0) ::kill(m.pid, SIGCONT);
}

std::string EtcdCluster::log(int member) const {
  return read_file(members_.at(static_cast<std::size_t>(member)).log_path);
}

}  // namespace snowid::test
