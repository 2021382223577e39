#include "redis_process.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>

#include <chrono>
#include <fstream>
#include <thread>

#include "orphan_guard.h"

extern char** environ;

namespace snowid::test {

namespace {

// Where Redis 7 keeps its append-only files in --dir (appenddirname's default).
constexpr const char* kAppendOnlyDir = "appendonlydir";

}  // namespace

RedisServer::RedisServer(std::vector<std::string> extra) {
  const std::string binary = find_program("redis-server");
  if (binary.empty()) {
    why_ = "redis-server is not on PATH (Debian: apt-get install redis-server)";
    return;
  }
  port_ = free_loopback_ports(1)[0];
  argv_ = {binary,
           "--port",
           std::to_string(port_),
           "--bind",
           "127.0.0.1",
           "--dir",
           dir_.path(),
           "--save",
           "",
           "--appendonly",
           "yes",
           "--appendfsync",
           "always",
           "--daemonize",
           "no",
           "--logfile",
           dir_.file("redis.log")};
  argv_.insert(argv_.end(), extra.begin(), extra.end());
  if (!spawn()) {
    why_ = "cannot start " + binary;
    return;
  }
  answered_ = wait_until_answering();
  if (!answered_) why_ = "redis-server did not answer PING within 10 s; its log:\n" + log();
}

RedisServer::RedisServer(const Sentinel& sentinel) {
  const std::string binary = find_program("redis-server");
  if (binary.empty()) {
    why_ = "redis-server is not on PATH (Debian: apt-get install redis-server)";
    return;
  }
  port_ = free_loopback_ports(1)[0];
  // Sentinel rewrites its configuration file: it must be its own, writable.
  const std::string conf = dir_.file("sentinel.conf");
  const std::string& m = sentinel.master;
  std::ofstream(conf) << "port " << port_ << "\nbind 127.0.0.1\ndaemonize no\n"
                      << "logfile " << dir_.file("redis.log") << "\ndir " << dir_.path() << "\n"
                      << "sentinel monitor " << m << " 127.0.0.1 " << sentinel.primary_port << " "
                      << sentinel.quorum << "\n"
                      << "sentinel down-after-milliseconds " << m << " "
                      << sentinel.down_after.count() << "\n"
                      << "sentinel failover-timeout " << m << " "
                      << sentinel.failover_timeout.count() << "\n"
                      << "sentinel parallel-syncs " << m << " 1\n";
  argv_ = {binary, conf, "--sentinel"};
  if (!spawn()) {
    why_ = "cannot start " + binary + " --sentinel";
    return;
  }
  answered_ = wait_until_answering();
  if (!answered_)
    why_ = "redis-server --sentinel did not answer PING within 10 s; its log:\n" + log();
}

RedisServer::~RedisServer() { kill(); }

bool RedisServer::spawn() {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  std::vector<char*> args;
  for (auto& a : argv_) args.push_back(a.data());
  args.push_back(nullptr);
  const int rc = posix_spawn(&pid_, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) pid_ = -1;
  if (rc == 0) watch_child(pid_);
  return rc == 0;
}

bool RedisServer::wait_until_answering() {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds{10};
  while (std::chrono::steady_clock::now() < deadline) {
    if (cli({"PING"}).find("PONG") != std::string::npos) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds{50});
  }
  return false;
}

std::string RedisServer::cli(const std::vector<std::string>& arguments) const {
  std::vector<std::string> argv{"/usr/bin/redis-cli", "-h", "127.0.0.1", "-p",
                                std::to_string(port_)};
  argv.insert(argv.end(), arguments.begin(), arguments.end());
  const ProcessResult r = run_process(argv);
  return r.out + r.err;
}

void RedisServer::kill() {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGKILL);
  reap_child(pid_, nullptr, 0);
  pid_ = -1;
}

void RedisServer::pause() {
  if (pid_ > 0) ::kill(pid_, SIGSTOP);
}

void RedisServer::resume() {
  if (pid_ > 0) ::kill(pid_, SIGCONT);
}

bool RedisServer::restart() {
  if (pid_ > 0 || !spawn()) return false;
  return wait_until_answering();
}

std::string RedisServer::back_up(const std::string& directory) const {
  // CONFIG GET answers with the name, then the value.
  const std::string answer = cli({"CONFIG", "GET", "auto-aof-rewrite-percentage"});
  const std::size_t start = answer.find('\n') + 1, end = answer.find('\n', start);
  if (start == 0 || end == std::string::npos) return "CONFIG GET answered: " + answer;
  const std::string percentage = answer.substr(start, end - start);
  if (cli({"CONFIG", "SET", "auto-aof-rewrite-percentage", "0"}).find("OK") == std::string::npos) {
    return "automatic AOF rewrites could not be turned off";
  }
  std::string failed = "an AOF rewrite was still running after 10 s";
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds{10};
  while (std::chrono::steady_clock::now() < deadline) {
    const std::string info = cli({"INFO", "persistence"});
    if (info.find("aof_rewrite_in_progress:0") != std::string::npos &&
        info.find("aof_rewrite_scheduled:0") != std::string::npos) {
      failed = copy_directory(dir_.file(kAppendOnlyDir), directory);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds{50});
  }
  cli({"CONFIG", "SET", "auto-aof-rewrite-percentage", percentage});
  return failed;
}

bool RedisServer::restore(const std::string& directory) {
  kill();
  return copy_directory(directory, dir_.file(kAppendOnlyDir)).empty() && restart();
}

std::string RedisServer::log() const { return read_file(dir_.file("redis.log")); }

namespace {

// The value of `field` in redis-cli's answer to SENTINEL MASTER (one line
// per name, then one per value), "" if absent.
std::string field_of(const std::string& answer, const std::string& field) {
  const std::string key = field + "\n";
  std::size_t at = answer.find(key);
  while (at != std::string::npos && at != 0 && answer[at - 1] != '\n') {
    at = answer.find(key, at + 1);
  }
  if (at == std::string::npos) return "";
  const std::size_t start = at + key.size();
  return answer.substr(start, answer.find('\n', start) - start);
}

// The end of `text`, at most `size` characters.
std::string tail(const std::string& text, std::size_t size = 3000) {
  return text.size() <= size ? text : "..." + text.substr(text.size() - size);
}

}  // namespace

RedisSentinelSet::RedisSentinelSet() {
  // As docs/cluster.md asks: a primary cut off from its replicas refuses
  // writes (NOREPLICAS) instead of taking them alone.
  const std::vector<std::string> min_replicas = {"--min-replicas-to-write", "1",
                                                 "--min-replicas-max-lag", "10"};
  servers_.push_back(std::make_unique<RedisServer>(min_replicas));
  if (!servers_[0]->started()) {
    why_ = servers_[0]->why();
    return;
  }
  const std::string primary_port = std::to_string(servers_[0]->port());
  primary_ = servers_[0]->endpoint();
  for (int i = 0; i < 2; ++i) {
    std::vector<std::string> replica = {"--replicaof", "127.0.0.1", primary_port};
    replica.insert(replica.end(), min_replicas.begin(), min_replicas.end());
    servers_.push_back(std::make_unique<RedisServer>(replica));
    if (!servers_.back()->started()) {
      why_ = servers_.back()->why();
      return;
    }
  }
  for (int i = 0; i < 3; ++i) {
    sentinels_.push_back(
        std::make_unique<RedisServer>(RedisServer::Sentinel{kMaster, servers_[0]->port()}));
    if (!sentinels_.back()->started()) {
      why_ = sentinels_.back()->why();
      return;
    }
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds{20};
  while (std::chrono::steady_clock::now() < deadline) {
    const std::string info = servers_[0]->cli({"INFO", "replication"});
    bool ready = info.find("connected_slaves:2") != std::string::npos &&
                 info.find("slave0:") != std::string::npos &&
                 info.find("slave1:") != std::string::npos;
    std::size_t online = 0;
    for (std::size_t at = info.find("state=online"); at != std::string::npos;
         at = info.find("state=online", at + 1)) {
      ++online;
    }
    ready = ready && online == 2;
    for (const auto& sentinel : sentinels_) {
      const std::string master = sentinel->cli({"SENTINEL", "MASTER", kMaster});
      ready = ready && field_of(master, "num-slaves") == "2" &&
              field_of(master, "num-other-sentinels") == "2" &&
              field_of(master, "flags") == "master";
    }
    if (ready) return;
    std::this_thread::sleep_for(std::chrono::milliseconds{100});
  }
  why_ = "the Redis set was not ready within 20 s: " + logs();
}

std::vector<std::string> RedisSentinelSet::sentinel_endpoints() const {
  std::vector<std::string> out;
  for (const auto& sentinel : sentinels_) out.push_back(sentinel->endpoint());
  return out;
}

std::string RedisSentinelSet::sentinels_text() const {
  std::string out;
  for (const auto& endpoint : sentinel_endpoints()) out += (out.empty() ? "" : ",") + endpoint;
  return out;
}

RedisServer* RedisSentinelSet::server(const std::string& endpoint) {
  for (const auto& server : servers_) {
    if (server->endpoint() == endpoint) return server.get();
  }
  return nullptr;
}

std::string RedisSentinelSet::named_by(std::size_t i) const {
  const std::string answer = sentinels_[i]->cli({"SENTINEL", "GET-MASTER-ADDR-BY-NAME", kMaster});
  const std::size_t newline = answer.find('\n');
  if (newline == std::string::npos) return "";
  const std::string host = answer.substr(0, newline);
  const std::size_t end = answer.find('\n', newline + 1);
  if (end == std::string::npos || host.empty()) return "";
  return host + ":" + answer.substr(newline + 1, end - newline - 1);
}

std::string RedisSentinelSet::kill_primary() {
  const std::string old = primary_;
  primary().kill();
  return old;
}

std::string RedisSentinelSet::wait_for_new_primary(const std::string& old,
                                                   std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    const std::string named = named_by(0);
    bool agreed = !named.empty() && named != old && server(named) != nullptr;
    for (std::size_t i = 1; agreed && i < sentinels_.size(); ++i) agreed = named_by(i) == named;
    if (agreed) {
      const std::string role = server(named)->cli({"ROLE"});
      const std::string info = server(named)->cli({"INFO", "replication"});
      if (role.rfind("master", 0) == 0 && info.find("state=online") != std::string::npos) {
        primary_ = named;
        return named;
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds{100});
  }
  return "";
}

std::string RedisSentinelSet::logs() const {
  std::string out;
  for (const auto& server : servers_) {
    out += "\n--- redis " + server->endpoint() + ":\n" + tail(server->log());
  }
  for (const auto& sentinel : sentinels_) {
    out += "\n--- sentinel " + sentinel->endpoint() + ":\n" + tail(sentinel->log());
  }
  return out;
}

}  // namespace snowid::test
