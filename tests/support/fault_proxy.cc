#include "fault_proxy.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <deque>
#include <list>
#include <string_view>
#include <tuple>
#include <vector>

#include "subprocess.h"

namespace snowid::test {

namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// The longest poll() of a round: a new fault, a connect_delay or a delayed
// chunk is acted on at most this late.
constexpr milliseconds kRound{10};

struct Chunk {
  Clock::time_point due;
  std::string bytes;  // empty: the close of the side it was read from
  std::size_t written = 0;
};

// One way of one connection: what was read from its source side and waits
// for its destination side.
struct Pipe {
  std::deque<Chunk> queue;
  std::size_t queued = 0;      // bytes in `queue`
  bool close_dropped = false;  // the source closed while this way dropped
};

struct Connection {
  int client = -1;
  int server = -1;  // -1 before the upstream connection is made, and after it closed
  bool upstream_made = false;
  // Accepted under http2_only(): reset unless its first bytes are the
  // preface (judged on the first bytes read, before any is relayed).
  bool must_speak_http2 = false;
  Clock::time_point opens_at;  // not relayed upstream before (connect_delay)
  Pipe requests, answers;
};

void close_with_reset(int& fd) {
  if (fd < 0) return;
  const linger hard{1, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_LINGER, &hard, sizeof hard);
  ::close(fd);
  fd = -1;
}

void close_plainly(int& fd) {
  if (fd < 0) return;
  ::close(fd);
  fd = -1;
}

bool drops(const FaultProxy::Way& way) { return way.kind == FaultProxy::Way::Kind::kDrop; }

// Whether a connection's first bytes begin HTTP/2's client preface (RFC 9113
// section 3.4), as far as they go: at least its first four bytes.
bool speaks_http2(std::string_view first) {
  constexpr std::string_view kPreface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
  if (first.size() < 4) return false;
  const std::size_t n = std::min(first.size(), kPreface.size());
  return first.substr(0, n) == kPreface.substr(0, n);
}

}  // namespace

// The relaying thread's own state: every connection and what it queued.
class FaultProxy::Relay {
 public:
  Relay(int listener, const std::atomic<int>& target_port, milliseconds connect_delay,
        std::mutex& stats_mutex, Stats& stats)
      : listener_(listener),
        target_port_(target_port),
        connect_delay_(connect_delay),
        stats_mutex_(stats_mutex),
        stats_(stats) {}
  ~Relay() {
    for (Connection& c : connections_) {
      close_plainly(c.client);
      close_plainly(c.server);
    }
  }
  Relay(const Relay&) = delete;
  Relay& operator=(const Relay&) = delete;

  void apply(const Fault& fault);
  void round();

 private:
  using Counter = std::uint64_t Stats::*;
  void count(Counter counter, std::uint64_t n) {
    std::lock_guard lock(stats_mutex_);
    stats_.*counter += n;
  }
  void accept_new();
  void open_upstream(Connection& c);
  // Reads what `fd` has for `pipe`; closes `fd` once its side closed.
  void read_into(int& fd, Pipe& pipe, const Way& way, Counter dropped);
  // Writes what is due in `pipe` to `fd`.
  void write_due(Pipe& pipe, int& fd, Counter relayed, bool upstream_pending);
  void drop_queue(Pipe& pipe, Counter dropped);

  const int listener_;
  const std::atomic<int>& target_port_;
  const milliseconds connect_delay_;
  Fault fault_;
  std::list<Connection> connections_;
  std::mutex& stats_mutex_;
  Stats& stats_;  // guarded by stats_mutex_
};

void FaultProxy::Relay::drop_queue(Pipe& pipe, Counter dropped) {
  for (const Chunk& chunk : pipe.queue) {
    if (chunk.bytes.empty()) pipe.close_dropped = true;
    count(dropped, chunk.bytes.size() - chunk.written);
  }
  pipe.queue.clear();
  pipe.queued = 0;
}

void FaultProxy::Relay::apply(const Fault& fault) {
  fault_ = fault;
  const auto now = Clock::now();
  for (auto it = connections_.begin(); it != connections_.end();) {
    if (fault.reset) {
      close_with_reset(it->client);
      close_with_reset(it->server);
      count(&Stats::resets, 1);
      it = connections_.erase(it);
      continue;
    }
    for (auto [pipe, way, dropped] :
         {std::tuple{&it->requests, fault.requests, &Stats::dropped_requests},
          std::tuple{&it->answers, fault.answers, &Stats::dropped_answers}}) {
      if (drops(way)) {
        drop_queue(*pipe, dropped);
      } else if (pipe->close_dropped) {
        // The close that was dropped arrives once the way passes again.
        pipe->close_dropped = false;
        pipe->queue.push_back(Chunk{now + way.delay, {}, 0});
      }
    }
    ++it;
  }
}

void FaultProxy::Relay::accept_new() {
  for (;;) {
    int client = ::accept4(listener_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (client < 0) return;
    count(&Stats::connections, 1);
    if (fault_.reset || static_cast<int>(connections_.size()) >= kMaxConnections) {
      close_with_reset(client);
      count(&Stats::resets, 1);
      continue;
    }
    Connection c;
    c.client = client;
    c.must_speak_http2 = fault_.http2_only;
    c.opens_at = Clock::now() + connect_delay_;
    connections_.push_back(std::move(c));
  }
}

// A handshake needs both ways: no upstream connection while either drops.
// A client gone before it was made has nothing left to relay.
void FaultProxy::Relay::open_upstream(Connection& c) {
  if (c.upstream_made) return;
  if (c.client < 0) {
    c.upstream_made = true;
    c.requests = Pipe{};
    return;
  }
  if (Clock::now() < c.opens_at) return;
  if (drops(fault_.requests) || drops(fault_.answers)) return;
  c.upstream_made = true;
  c.server = connect_loopback(target_port_);
  if (c.server < 0) {  // the server is down: the client learns it as a reset
    close_with_reset(c.client);
    return;
  }
  ::fcntl(c.server, F_SETFL, ::fcntl(c.server, F_GETFL) | O_NONBLOCK);
}

void FaultProxy::Relay::read_into(int& fd, Pipe& pipe, const Way& way, Counter dropped) {
  std::array<char, 16384> buffer{};
  const ssize_t n = ::read(fd, buffer.data(), buffer.size());
  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return;
  if (n > 0 && drops(way)) {
    count(dropped, static_cast<std::uint64_t>(n));
    return;
  }
  if (n <= 0) {
    close_plainly(fd);
    if (drops(way)) {
      pipe.close_dropped = true;
      return;
    }
  }
  Chunk chunk{Clock::now() + way.delay, {}, 0};
  if (n > 0) chunk.bytes.assign(buffer.data(), static_cast<std::size_t>(n));
  pipe.queued += chunk.bytes.size();
  pipe.queue.push_back(std::move(chunk));
}

void FaultProxy::Relay::write_due(Pipe& pipe, int& fd, Counter relayed, bool upstream_pending) {
  const auto now = Clock::now();
  while (!pipe.queue.empty() && pipe.queue.front().due <= now) {
    Chunk& chunk = pipe.queue.front();
    if (fd < 0 && upstream_pending) return;  // held until the upstream connection is made
    if (fd >= 0 && chunk.bytes.empty()) close_plainly(fd);
    while (fd >= 0 && chunk.written < chunk.bytes.size()) {
      const ssize_t w = ::send(fd, chunk.bytes.data() + chunk.written,
                               chunk.bytes.size() - chunk.written, MSG_NOSIGNAL);
      if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
      if (w <= 0) {
        close_plainly(fd);
        break;
      }
      chunk.written += static_cast<std::size_t>(w);
      count(relayed, static_cast<std::uint64_t>(w));
    }
    pipe.queued -= chunk.bytes.size();
    pipe.queue.pop_front();  // written, or its destination is gone
  }
}

void FaultProxy::Relay::round() {
  std::vector<pollfd> fds{{listener_, POLLIN, 0}};
  const auto now = Clock::now();
  const auto events = [now](const Pipe& in, const Pipe& out) {
    int wanted = in.queued < kMaxQueued ? POLLIN : 0;
    if (!out.queue.empty() && out.queue.front().due <= now) wanted |= POLLOUT;
    return static_cast<short>(wanted);
  };
  for (Connection& c : connections_) {
    open_upstream(c);
    fds.push_back({c.client, events(c.requests, c.answers), 0});
    fds.push_back({c.server, events(c.answers, c.requests), 0});  // fd -1 is ignored
  }
  if (::poll(fds.data(), fds.size(), static_cast<int>(kRound.count())) < 0) return;
  if ((fds[0].revents & POLLIN) != 0) accept_new();
  std::size_t i = 1;
  const int readable = POLLIN | POLLHUP | POLLERR;
  for (auto it = connections_.begin(); it != connections_.end() && i < fds.size(); i += 2) {
    Connection& c = *it;
    if (c.client >= 0 && (fds[i].revents & readable) != 0) {
      read_into(c.client, c.requests, fault_.requests, &Stats::dropped_requests);
      if (c.must_speak_http2 && !c.requests.queue.empty()) {
        c.must_speak_http2 = false;
        if (!speaks_http2(c.requests.queue.front().bytes)) {
          close_with_reset(c.client);
          close_with_reset(c.server);
          c.requests = Pipe{};
          c.answers = Pipe{};
          count(&Stats::resets, 1);
        }
      }
    }
    if (c.server >= 0 && (fds[i + 1].revents & readable) != 0) {
      read_into(c.server, c.answers, fault_.answers, &Stats::dropped_answers);
    }
    write_due(c.requests, c.server, &Stats::relayed_requests, !c.upstream_made);
    write_due(c.answers, c.client, &Stats::relayed_answers, false);
    const bool finished =
        c.client < 0 && c.server < 0 && !c.requests.close_dropped && !c.answers.close_dropped;
    it = finished ? connections_.erase(it) : std::next(it);
  }
}

FaultProxy::FaultProxy(int target_port, milliseconds connect_delay)
    : target_port_(target_port), connect_delay_(connect_delay) {
  listener_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof address;
  if (listener_ < 0 || ::bind(listener_, reinterpret_cast<sockaddr*>(&address), length) != 0 ||
      ::listen(listener_, 64) != 0 ||
      ::getsockname(listener_, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
    return;
  }
  port_ = ntohs(address.sin_port);
  thread_ = std::thread([this] { run(); });
}

FaultProxy::~FaultProxy() {
  stopping_ = true;
  applied_.notify_all();
  if (thread_.joinable()) thread_.join();
  if (listener_ >= 0) ::close(listener_);
}

void FaultProxy::run() {
  Relay relay(listener_, target_port_, connect_delay_, mutex_, stats_);
  std::uint64_t applied = 0;
  while (!stopping_) {
    Fault fault;
    std::unique_lock lock(mutex_);
    const std::uint64_t epoch = fault_epoch_;
    fault = fault_;
    lock.unlock();
    if (epoch != applied) {
      relay.apply(fault);  // counts under mutex_ itself
      applied = epoch;
      lock.lock();
      applied_epoch_ = epoch;
      applied_.notify_all();
      lock.unlock();
    }
    relay.round();
  }
}

void FaultProxy::set(const Fault& fault) {
  std::unique_lock lock(mutex_);
  fault_ = fault;
  const std::uint64_t epoch = ++fault_epoch_;
  // A round lasts at most kRound plus the relaying it does; 5 s bounds a
  // thread that is not running at all (no listener).
  applied_.wait_for(lock, std::chrono::seconds{5},
                    [&] { return applied_epoch_ >= epoch || stopping_ || port_ == 0; });
}

void FaultProxy::pass() { set(Fault{}); }

void FaultProxy::blackhole(Flow flow) {
  Fault fault;
  const Way drop{Way::Kind::kDrop, milliseconds{0}};
  if (flow != Flow::kAnswers) fault.requests = drop;
  if (flow != Flow::kRequests) fault.answers = drop;
  set(fault);
}

void FaultProxy::delay(milliseconds by, Flow flow) {
  Fault fault;
  const Way late{Way::Kind::kDelay, by};
  if (flow != Flow::kAnswers) fault.requests = late;
  if (flow != Flow::kRequests) fault.answers = late;
  set(fault);
}

void FaultProxy::http2_only() {
  Fault fault;
  fault.http2_only = true;
  set(fault);
}

void FaultProxy::reset() {
  Fault fault;
  fault.reset = true;
  set(fault);
}

FaultProxy::Stats FaultProxy::stats() const {
  std::lock_guard lock(mutex_);
  return stats_;
}

}  // namespace snowid::test
