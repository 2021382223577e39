#include "server_process.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "orphan_guard.h"
#include "subprocess.h"

namespace snowid::test {
namespace {

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

}  // namespace

std::size_t parse_http_response(const std::string& data, HttpReply& reply, bool without_content) {
  const auto end = data.find("\r\n\r\n");
  if (end == std::string::npos) return 0;
  std::istringstream head(data.substr(0, end));
  std::string line;
  std::getline(head, line);
  std::istringstream status_line(line);
  std::string version;
  status_line >> version >> reply.status;
  reply.headers.clear();
  while (std::getline(head, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    const auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string value = line.substr(colon + 1);
    while (!value.empty() && value.front() == ' ') value.erase(0, 1);
    reply.headers[lower(line.substr(0, colon))] = value;
  }
  std::size_t length = 0;
  if (auto it = reply.headers.find("content-length");
      !without_content && it != reply.headers.end()) {
    length = std::stoul(it->second);
  }
  if (data.size() < end + 4 + length) return 0;
  reply.body = data.substr(end + 4, length);
  return end + 4 + length;
}

ServerProcess::ServerProcess(const std::string& binary, std::vector<std::string> args,
                             const std::map<std::string, std::string>& env) {
  char pattern[] = "/tmp/snowidd-log-XXXXXX";
  const int log_fd = ::mkstemp(pattern);
  if (log_fd < 0) throw std::runtime_error("mkstemp failed");
  ::close(log_fd);
  log_path_ = pattern;

  args.insert(args.begin(), binary);
  for (const char* listener : {"--http", "--grpc"}) {  // port 0 unless the test chose one
    if (std::find(args.begin(), args.end(), listener) != args.end()) continue;
    args.push_back(listener);
    args.push_back("127.0.0.1:0");
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 1, log_path_.c_str(), O_WRONLY | O_APPEND, 0);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  std::vector<std::string> env_strings = child_environment(env);
  std::vector<char*> argv, envp;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  for (auto& e : env_strings) envp.push_back(e.data());
  envp.push_back(nullptr);
  const int rc = posix_spawn(&pid_, argv[0], &actions, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) throw std::runtime_error("cannot start " + binary);
  watch_child(pid_);

  // The start-up line ("snowidd ... starting: ...") names the port of
  // every listener: "..., http 127.0.0.1:P, grpc 127.0.0.1:Q, ..."; no
  // grpc with --grpc off. Read once the whole line is written.
  // (No std::regex: tests start servers from several threads, and
  // libstdc++'s regex compiler races on a locale cache there.)
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds{40};
  while (std::chrono::steady_clock::now() < deadline) {
    const std::string text = read_file(log_path_);
    const std::size_t start = text.find(" starting: ");
    const std::size_t end = start == std::string::npos ? start : text.find('\n', start);
    if (end != std::string::npos) {
      const std::string line = text.substr(start, end - start);
      const std::string http = digits_after(line, ", http 127.0.0.1:");
      const std::string grpc = digits_after(line, ", grpc 127.0.0.1:");
      if (!http.empty()) {
        port_ = std::stoi(http);
        grpc_port_ = grpc.empty() ? 0 : std::stoi(grpc);
        return;
      }
    }
    if (reap_child(pid_, &wait_status_, WNOHANG) == pid_) {
      reaped_ = true;
      return;  // exited during start; started() is false, log() says why
    }
    std::this_thread::sleep_for(std::chrono::milliseconds{10});
  }
}

std::string digits_after(const std::string& text, const std::string& marker) {
  const std::size_t at = text.find(marker);
  if (at == std::string::npos) return "";
  std::size_t end = at + marker.size();
  while (end < text.size() && text[end] >= '0' && text[end] <= '9') ++end;
  return text.substr(at + marker.size(), end - at - marker.size());
}

ServerProcess::~ServerProcess() {
  if (!reaped_ && pid_ > 0) {
    ::kill(pid_, SIGKILL);
    reap_child(pid_, nullptr, 0);
  }
  ::unlink(log_path_.c_str());
}

std::string ServerProcess::log() const { return read_file(log_path_); }

int ServerProcess::listener_port(const std::string& name) const {
  const std::string port = digits_after(log(), name + " 127.0.0.1:");
  return port.empty() ? 0 : std::stoi(port);
}

void ServerProcess::signal(int sig) {
  if (!reaped_) ::kill(pid_, sig);
}

int ServerProcess::wait(std::chrono::seconds limit) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (!reaped_) {
    if (reap_child(pid_, &wait_status_, WNOHANG) == pid_) {
      reaped_ = true;
      break;
    }
    if (std::chrono::steady_clock::now() > deadline) {
      ::kill(pid_, SIGKILL);
      reap_child(pid_, &wait_status_, 0);
      reaped_ = true;
      return -SIGKILL;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds{5});
  }
  if (WIFEXITED(wait_status_)) return WEXITSTATUS(wait_status_);
  return WIFSIGNALED(wait_status_) ? -WTERMSIG(wait_status_) : -1;
}

HttpConnection::HttpConnection(int port) : connection_(port) {}

HttpConnection::~HttpConnection() = default;

bool HttpConnection::send(const std::string& bytes) { return connection_.send(bytes); }

HttpReply HttpConnection::read(std::chrono::milliseconds timeout) {
  return read_one(timeout, false);
}

HttpReply HttpConnection::read_head(std::chrono::milliseconds timeout) {
  return read_one(timeout, true);
}

HttpReply HttpConnection::read_one(std::chrono::milliseconds timeout, bool without_content) {
  HttpReply reply;
  std::size_t used = 0;
  const bool whole = connection_.read_until(
      [&](const std::string& data) {
        reply = HttpReply{};
        used = parse_http_response(data, reply, without_content);
        return used > 0;
      },
      timeout);
  if (!whole) return HttpReply{};
  connection_.received().erase(0, used);
  return reply;
}

bool HttpConnection::closed_by_peer(std::chrono::milliseconds timeout) {
  return connection_.closed_by_peer(timeout);
}

HttpReply http_raw(int port, const std::string& bytes, std::chrono::milliseconds timeout) {
  HttpConnection c(port);
  if (!c.send(bytes)) return HttpReply{};
  return c.read(timeout);
}

HttpReply http_get(int port, const std::string& target, const std::vector<std::string>& headers) {
  std::string request = "GET " + target + " HTTP/1.1\r\nHost: 127.0.0.1\r\n";
  for (const auto& h : headers) request += h + "\r\n";
  request += "\r\n";
  return http_raw(port, request);
}

}  // namespace snowid::test
