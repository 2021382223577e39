#include "zookeeper_process.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <thread>

#include "orphan_guard.h"

extern char** environ;

namespace snowid::test {

namespace {

constexpr const char* kZooKeeperJar = "/usr/share/java/zookeeper.jar";

// Sends a four-letter command and returns the whole answer ("" on failure).
std::string four_letters(int port, const std::string& command) {
  const int fd = connect_loopback(port);
  if (fd < 0) return "";
  timeval limit{2, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof limit);
  std::string answer;
  if (::write(fd, command.data(), command.size()) == static_cast<ssize_t>(command.size())) {
    char buffer[4096];
    ssize_t n = 0;
    while ((n = ::read(fd, buffer, sizeof buffer)) > 0)
      answer.append(buffer, static_cast<std::size_t>(n));
  }
  ::close(fd);
  return answer;
}

}  // namespace

ZooKeeperEnsemble::ZooKeeperEnsemble(int servers) {
  java_ = find_program("java");
  if (java_.empty() || ::access(kZooKeeperJar, R_OK) != 0) {
    why_ = "java or ZooKeeper is missing (Debian: apt-get install zookeeper)";
    return;
  }
  const std::vector<int> ports = free_loopback_ports(3 * servers);
  servers_.resize(static_cast<std::size_t>(servers));
  std::string quorum;
  for (int i = 0; i < servers; ++i) {
    Server& s = servers_[static_cast<std::size_t>(i)];
    s.client_port = ports[static_cast<std::size_t>(3 * i)];
    s.quorum_port = ports[static_cast<std::size_t>(3 * i + 1)];
    s.election_port = ports[static_cast<std::size_t>(3 * i + 2)];
    quorum += "server." + std::to_string(i + 1) + "=127.0.0.1:" + std::to_string(s.quorum_port) +
              ":" + std::to_string(s.election_port) + "\n";
  }
  for (int i = 0; i < servers; ++i) {
    Server& s = servers_[static_cast<std::size_t>(i)];
    const std::string data = data_dir(i);
    ::mkdir(data.c_str(), 0700);
    s.config = dir_.file("zoo" + std::to_string(i) + ".cfg");
    std::ofstream config(s.config);
    config << "tickTime=" << kTickTime.count() << "\n"
           << "initLimit=50\nsyncLimit=10\n"
           << "dataDir=" << data << "\n"
           << "clientPort=" << s.client_port << "\n"
           << "clientPortAddress=127.0.0.1\n"
           << "maxSessionTimeout=60000\n"
           << "maxClientCnxns=0\n"
           << "admin.enableServer=false\n"
           << "4lw.commands.whitelist=srvr,ruok\n"
           << "preAllocSize=4096\n";
    if (servers > 1) {
      config << quorum;
      std::ofstream(data + "/myid") << (i + 1) << "\n";
    }
  }
  std::vector<int> all;
  for (int i = 0; i < servers; ++i) {
    if (!spawn(i)) {
      why_ = "cannot start " + java_;
      return;
    }
    all.push_back(i);
  }
  started_ = wait_until_serving(all);
  if (!started_) why_ = "ZooKeeper did not serve within 30 s; log of server 0:\n" + log(0);
}

ZooKeeperEnsemble::~ZooKeeperEnsemble() {
  for (std::size_t i = 0; i < servers_.size(); ++i) kill(static_cast<int>(i));
}

bool ZooKeeperEnsemble::spawn(int server) {
  Server& s = servers_.at(static_cast<std::size_t>(server));
  std::vector<std::string> argv{java_,
                                "-Xmx192m",
                                "-XX:+UseSerialGC",
                                "-XX:TieredStopAtLevel=1",
                                "-Dzookeeper.jmx.log4j.disable=true",
                                "-cp",
                                kZooKeeperJar,
                                "org.apache.zookeeper.server.quorum.QuorumPeerMain",
                                s.config};
  const std::string log_file = log_path(server);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 1, log_file.c_str(), O_WRONLY | O_CREAT | O_APPEND,
                                   0600);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  std::vector<char*> args;
  for (auto& a : argv) args.push_back(a.data());
  args.push_back(nullptr);
  const int rc = posix_spawn(&s.pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) s.pid = -1;
  if (rc == 0) watch_child(s.pid);
  return rc == 0;
}

bool ZooKeeperEnsemble::serving(int server) const {
  return four_letters(servers_.at(static_cast<std::size_t>(server)).client_port, "srvr")
             .find("Mode: ") != std::string::npos;
}

bool ZooKeeperEnsemble::wait_until_serving(const std::vector<int>& servers) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds{30};
  while (std::chrono::steady_clock::now() < deadline) {
    bool all = true;
    for (int server : servers) all = all && serving(server);
    if (all) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds{100});
  }
  return false;
}

std::string ZooKeeperEnsemble::endpoint(int server) const {
  return "127.0.0.1:" + std::to_string(servers_.at(static_cast<std::size_t>(server)).client_port);
}

std::vector<std::string> ZooKeeperEnsemble::endpoints() const {
  std::vector<std::string> all;
  for (std::size_t i = 0; i < servers_.size(); ++i) all.push_back(endpoint(static_cast<int>(i)));
  return all;
}

std::string ZooKeeperEnsemble::endpoints_text() const {
  std::string text;
  for (const std::string& e : endpoints()) text += (text.empty() ? "" : ",") + e;
  return text;
}

void ZooKeeperEnsemble::kill(int server) {
  Server& s = servers_.at(static_cast<std::size_t>(server));
  if (s.pid <= 0) return;
  ::kill(s.pid, SIGCONT);  // a paused server dies too
  ::kill(s.pid, SIGKILL);
  reap_child(s.pid, nullptr, 0);
  s.pid = -1;
}

void ZooKeeperEnsemble::pause(int server) {
  const pid_t pid = servers_.at(static_cast<std::size_t>(server)).pid;
  if (pid > 0) ::kill(pid, SIGSTOP);
}

void ZooKeeperEnsemble::resume(int server) {
  const pid_t pid = servers_.at(static_cast<std::size_t>(server)).pid;
  if (pid > 0) ::kill(pid, SIGCONT);
}

bool ZooKeeperEnsemble::restart(int server) {
  if (servers_.at(static_cast<std::size_t>(server)).pid > 0 || !spawn(server)) return false;
  return wait_until_serving({server});
}

bool ZooKeeperEnsemble::wipe(int server) {
  kill(server);
  std::error_code ec;
  const std::filesystem::path data = data_dir(server);
  for (const auto& entry : std::filesystem::directory_iterator(data, ec)) {
    if (entry.path().filename() != "myid") std::filesystem::remove_all(entry.path(), ec);
  }
  return !ec && restart(server);
}

std::string ZooKeeperEnsemble::back_up(int server, const std::string& directory) const {
  return copy_directory(data_dir(server), directory);
}

bool ZooKeeperEnsemble::restore(int server, const std::string& directory) {
  kill(server);
  return copy_directory(directory, data_dir(server)).empty() && restart(server);
}

std::string ZooKeeperEnsemble::data_dir(int server) const {
  return dir_.file("data" + std::to_string(server));
}

std::string ZooKeeperEnsemble::log_path(int server) const {
  return dir_.file("zookeeper" + std::to_string(server) + ".log");
}

std::string ZooKeeperEnsemble::log(int server) const { return read_file(log_path(server)); }

}  // namespace snowid::test
