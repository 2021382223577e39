// What the load and abuse tests share: a probe client that keeps asking a
// snowidd for IDs and times each answer while the server is under attack,
// raw connections that send anything and collect every response until the
// server closes, a flood of held-open connections, and readings of the
// server process (resident memory, CPU time, /metrics samples).
//
// Thresholds: the suite also runs under AddressSanitizer and
// ThreadSanitizer on a shared 2-core machine, so latency and memory bounds
// are loose enough for that, and tight enough to catch a server that stalls
// or grows per connection without bound.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "chaos.h"  // cpu_time(), metric()
#include "server_process.h"

namespace snowid::test {

// Built with AddressSanitizer (with UndefinedBehaviorSanitizer beside it,
// as scripts/sanitize.sh builds it), or with any sanitizer.
#if defined(__SANITIZE_ADDRESS__)
inline constexpr bool kAddressSanitizer = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
inline constexpr bool kAddressSanitizer = true;
#else
inline constexpr bool kAddressSanitizer = false;
#endif
#else
inline constexpr bool kAddressSanitizer = false;
#endif
#if defined(__SANITIZE_THREAD__)
inline constexpr bool kSanitized = true;
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
inline constexpr bool kSanitized = true;
#else
inline constexpr bool kSanitized = kAddressSanitizer;
#endif
#else
inline constexpr bool kSanitized = kAddressSanitizer;
#endif

// Keeps requesting GET /v1/id?format=text from its own thread, a few
// milliseconds apart, until stop(). With kKeptAlive it uses one connection
// opened in the constructor (so it holds its place below max_connections
// before an attack fills the rest); with kFreshConnections it connects anew
// for every request, so it also measures the accept path.
class IdProbe {
 public:
  enum class Connections { kKeptAlive, kFreshConnections };
  struct Report {
    std::vector<std::int64_t> ids;
    std::vector<std::chrono::microseconds> latencies;  // one per request
    int failures = 0;
    std::string first_failure;
    // The p-quantile (0 < p <= 1) of the latencies; zero if none.
    std::chrono::microseconds quantile(double p) const;
    // "" if every request got a distinct ID; otherwise what went wrong.
    std::string problems() const;
  };

  IdProbe(int port, Connections connections);
  ~IdProbe();
  IdProbe(const IdProbe&) = delete;
  IdProbe& operator=(const IdProbe&) = delete;

  Report stop();

 private:
  void run();
  bool request(HttpConnection& connection);

  int port_;
  Connections connections_;
  std::unique_ptr<HttpConnection> kept_;
  std::atomic<bool> stop_{false};
  Report report_;
  std::thread thread_;
};

// A raw client connection: sends any bytes, can half-close, and reads until
// the server closes (or a quiet period passes), splitting what came back
// into responses.
class RawConnection {
 public:
  // `receive_buffer`, if not 0, is set as SO_RCVBUF before connecting (a
  // small one keeps the kernel from buffering much for a client that does
  // not read).
  explicit RawConnection(int port, int receive_buffer = 0);
  ~RawConnection();
  RawConnection(const RawConnection&) = delete;
  RawConnection& operator=(const RawConnection&) = delete;

  bool connected() const { return socket_.connected(); }
  bool send(std::string_view bytes) { return socket_.send(bytes); }
  void shutdown_write() { socket_.shutdown_write(); }

  struct Outcome {
    std::vector<HttpReply> replies;
    bool closed = false;   // the server closed the connection
    std::string leftover;  // bytes that do not form a whole response
  };
  // Reads until the server closes, or nothing arrives for `quiet`, or
  // `limit` has passed.
  Outcome read_until_closed(std::chrono::milliseconds quiet = std::chrono::milliseconds{1500},
                            std::chrono::milliseconds limit = std::chrono::seconds{10});
  // Reads until `count` whole responses have come, or the server closes, or
  // `limit` has passed.
  Outcome read_replies(std::size_t count,
                       std::chrono::milliseconds limit = std::chrono::seconds{10});

 private:
  // Reads what arrives within `wait` into `outcome` (false if nothing did).
  bool read_some(Outcome& outcome, std::chrono::milliseconds wait);

  // Its received() holds the bytes that do not form a whole response yet.
  RawSocket socket_;
};

// Sends `bytes` on a new connection and reads everything until the server
// closes it (see RawConnection::read_until_closed).
RawConnection::Outcome send_and_collect(int port, std::string_view bytes, bool half_close = false);

// Many TCP connections to one port, opened at once and held until
// destruction (or close_all()). Each may first send `greeting` (say, the
// start of a request that never ends).
class ConnectionFlood {
 public:
  ConnectionFlood(int port, int count, const std::string& greeting = "");
  ~ConnectionFlood() { close_all(); }
  ConnectionFlood(const ConnectionFlood&) = delete;
  ConnectionFlood& operator=(const ConnectionFlood&) = delete;

  int opened() const { return static_cast<int>(fds_.size()); }
  void close_all();

 private:
  std::vector<int> fds_;
};

// Raises this process's soft limit on open files towards `wanted` (up to
// the hard limit); returns the limit now in force. Child processes inherit it.
long raise_open_file_limit(long wanted);

// Sets the open-file limit (soft and hard) of a running process (prlimit(2)).
bool set_open_file_limit(pid_t pid, long limit);
// How many descriptors a process has open; -1 if unknown.
long open_descriptors(pid_t pid);

// Resident memory of a process, in KiB (VmRSS of /proc/PID/status); -1 if unknown.
long rss_kib(pid_t pid);


// The value of `name` in a fresh GET /metrics over `connection` (kept alive,
// so it can be asked while the server refuses new connections).
std::optional<double> read_metric(HttpConnection& connection, const std::string& name);

}  // namespace snowid::test
