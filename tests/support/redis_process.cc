#include "redis_process.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>

#include <chrono>
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

}  // namespace snowid::test
