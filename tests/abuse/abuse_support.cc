#include "abuse_support.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "subprocess.h"

namespace snowid::test {
namespace {

using Clock = std::chrono::steady_clock;

int connect_to(int port, bool blocking, int receive_buffer = 0) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | (blocking ? 0 : SOCK_NONBLOCK), 0);
  if (fd < 0) return -1;
  if (receive_buffer > 0) {
    ::setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &receive_buffer, sizeof receive_buffer);
  }
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<std::uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 && errno != EINPROGRESS) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// Splits the front of `data` into whole responses; what is left stays in `data`.
std::vector<HttpReply> split_responses(std::string& data) {
  std::vector<HttpReply> replies;
  HttpReply reply;
  while (const std::size_t used = parse_http_response(data, reply)) {
    data.erase(0, used);
    replies.push_back(std::move(reply));
    reply = HttpReply{};
  }
  return replies;
}

}  // namespace

std::chrono::microseconds IdProbe::Report::quantile(double p) const {
  if (latencies.empty()) return std::chrono::microseconds{0};
  std::vector<std::chrono::microseconds> sorted = latencies;
  std::sort(sorted.begin(), sorted.end());
  const auto rank =
      static_cast<std::size_t>(std::lround(p * static_cast<double>(sorted.size() - 1)));
  return sorted[std::min(rank, sorted.size() - 1)];
}

std::string IdProbe::Report::problems() const {
  if (failures > 0) {
    return std::to_string(failures) + " of " + std::to_string(latencies.size()) +
           " requests failed, the first: " + first_failure;
  }
  if (std::set<std::int64_t>(ids.begin(), ids.end()).size() != ids.size()) {
    return "an ID was given twice";
  }
  return "";
}

IdProbe::IdProbe(int port, Connections connections) : port_(port), connections_(connections) {
  if (connections_ == Connections::kKeptAlive) {
    kept_ = std::make_unique<HttpConnection>(port_);
    // One request before the attack, so the connection is surely accepted.
    request(*kept_);
  }
  thread_ = std::thread([this] { run(); });
}

IdProbe::~IdProbe() {
  if (thread_.joinable()) stop();
}

IdProbe::Report IdProbe::stop() {
  stop_ = true;
  thread_.join();
  return std::move(report_);
}

void IdProbe::run() {
  while (!stop_) {
    if (kept_) {
      if (!request(*kept_)) kept_ = std::make_unique<HttpConnection>(port_);
    } else {
      HttpConnection fresh(port_);
      request(fresh);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds{5});
  }
}

bool IdProbe::request(HttpConnection& connection) {
  const auto begin = Clock::now();
  HttpReply reply;
  if (connection.send("GET /v1/id?format=text HTTP/1.1\r\nHost: probe\r\n\r\n")) {
    reply = connection.read(std::chrono::seconds{5});
  }
  report_.latencies.push_back(
      std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - begin));
  std::int64_t id = -1;
  const std::string_view body = reply.body;
  const auto parsed = std::from_chars(body.data(), body.data() + body.size(), id);
  if (reply.status == 200 && parsed.ec == std::errc{} && id > 0) {
    report_.ids.push_back(id);
    return true;
  }
  if (report_.failures++ == 0) {
    report_.first_failure =
        reply.status == 0 ? "no response" : std::to_string(reply.status) + " " + reply.body;
  }
  return false;
}

RawConnection::RawConnection(int port, int receive_buffer) : socket_(port, receive_buffer) {}

RawConnection::~RawConnection() = default;

bool RawConnection::read_some(Outcome& outcome, std::chrono::milliseconds wait) {
  const int got = socket_.read_some(wait);
  if (got == 0) outcome.closed = true;  // FIN, or a reset
  if (got != 1) return false;
  for (auto& reply : split_responses(socket_.received()))
    outcome.replies.push_back(std::move(reply));
  return true;
}

RawConnection::Outcome RawConnection::read_until_closed(std::chrono::milliseconds quiet,
                                                        std::chrono::milliseconds limit) {
  Outcome outcome;
  const auto deadline = Clock::now() + limit;
  while (Clock::now() < deadline) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (!read_some(outcome, std::min(quiet, left))) break;
  }
  outcome.leftover = socket_.received();
  return outcome;
}

RawConnection::Outcome RawConnection::read_replies(std::size_t count,
                                                   std::chrono::milliseconds limit) {
  Outcome outcome;
  const auto deadline = Clock::now() + limit;
  while (outcome.replies.size() < count && !outcome.closed && Clock::now() < deadline) {
    read_some(outcome,
              std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()));
  }
  outcome.leftover = socket_.received();
  return outcome;
}

RawConnection::Outcome send_and_collect(int port, std::string_view bytes, bool half_close) {
  RawConnection connection(port);
  if (!connection.send(bytes)) return {};
  if (half_close) connection.shutdown_write();
  return connection.read_until_closed();
}

ConnectionFlood::ConnectionFlood(int port, int count, const std::string& greeting) {
  fds_.reserve(static_cast<std::size_t>(count));
  for (int i = 0; i < count; ++i) {
    const int fd = connect_to(port, false);
    if (fd < 0) break;
    fds_.push_back(fd);
  }
  // Wait for the connections to be established (the kernel completes them
  // from the listen backlog, accepted or not), then greet.
  const auto deadline = Clock::now() + std::chrono::seconds{10};
  for (int fd : fds_) {
    pollfd p{fd, POLLOUT, 0};
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (::poll(&p, 1, static_cast<int>(std::max<std::int64_t>(left.count(), 0))) <= 0) continue;
    if (!greeting.empty()) {
      [[maybe_unused]] const ssize_t n =
          ::send(fd, greeting.data(), greeting.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    }
  }
}

void ConnectionFlood::close_all() {
  for (int fd : fds_) ::close(fd);
  fds_.clear();
}

long raise_open_file_limit(long wanted) {
  rlimit files{};
  if (::getrlimit(RLIMIT_NOFILE, &files) != 0) return -1;
  if (files.rlim_cur < static_cast<rlim_t>(wanted)) {
    files.rlim_cur = std::min(files.rlim_max, static_cast<rlim_t>(wanted));
    if (::setrlimit(RLIMIT_NOFILE, &files) != 0) ::getrlimit(RLIMIT_NOFILE, &files);
  }
  return static_cast<long>(files.rlim_cur);
}

bool set_open_file_limit(pid_t pid, long limit) {
  const rlimit files{static_cast<rlim_t>(limit), static_cast<rlim_t>(limit)};
  return ::prlimit(pid, RLIMIT_NOFILE, &files, nullptr) == 0;
}

long open_descriptors(pid_t pid) {
  std::error_code ec;
  long count = 0;
  for (std::filesystem::directory_iterator fd("/proc/" + std::to_string(pid) + "/fd", ec), end;
       !ec && fd != end; fd.increment(ec)) {
    ++count;
  }
  return ec ? -1 : count;
}

long rss_kib(pid_t pid) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stol(line.substr(6));
  }
  return -1;
}

std::optional<double> read_metric(HttpConnection& connection, const std::string& name) {
  if (!connection.send("GET /metrics HTTP/1.1\r\nHost: observer\r\n\r\n")) return std::nullopt;
  const HttpReply reply = connection.read();
  if (reply.status != 200) return std::nullopt;
  return metric(reply.body, name);
}

}  // namespace snowid::test
