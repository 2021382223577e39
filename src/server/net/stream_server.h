// A request/response protocol over plain TCP (Thrift's framed binary
// protocol, RESP) served by snowidd: the connection handling every such
// listener shares, with its protocol behind StreamHandler.
//
// Each connection reads into a buffer of at most max_pending_bytes, lets its
// handler answer every complete request at the front (pipelined requests are
// answered in order, their answers gathered into one write), writes, and
// reads again. A connection is closed when its handler says so (after the
// answer is written), when the peer closes, when a request does not fit
// max_pending_bytes (after the handler's refusal, if any), at the idle
// timeout between requests (if any), and at the HTTP read timeout while a
// request or an answer is under way (a slow client cannot hold a
// connection). Past max_connections a new connection is closed at once,
// after a short answer if the protocol has one. Connection threads: io_threads, as HTTP's.
//
// Authentication, the same for every stream protocol: with a bearer token
// set, a connection is unauthenticated until its handler says it has
// authenticated (RESP's AUTH, Thrift's authenticate), unless its peer is in
// the listener's trusted_networks (then it is authenticated from the
// start). Unauthenticated connections hold at most unauthenticated_slots()
// of the listener's slots; when they are all held, a new one closes the
// oldest of them that had its chance (unauthenticated_share.h: the rules,
// and the half of the share one address may hold), or is refused as at
// max_connections if none did; both counted apart. One still
// unauthenticated auth_timeout after it opened is closed and counted.
// So connections that never authenticate can keep out neither
// authenticated clients nor a new one that authenticates in its first
// request.
#pragma once

#include <atomic>
#include <boost/asio/io_context.hpp>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "listener.h"
#include "service.h"
#include "stream_listener_options.h"

namespace snowid::server {

// Answers at most this many bytes for one write; the rest of the pipelined
// requests are answered after it.
inline constexpr std::size_t kMaxGatheredAnswerBytes = 64 * 1024;

// One connection's protocol state; lives on one thread at a time.
class StreamHandler {
 public:
  virtual ~StreamHandler() = default;

  struct Step {
    // Bytes at the front of the input that were complete requests, now
    // answered; the rest is kept for the next call, with more appended.
    std::size_t consumed = 0;
    // Close the connection once the output is written (a request that
    // cannot be framed, QUIT).
    bool close = false;
  };
  // Answers the complete requests at the front of `input`, appending the
  // answers to `output`, until none is left or output holds more than
  // kMaxGatheredAnswerBytes.
  virtual Step consume(std::string_view input, std::string& output) = 0;
  // The request at the front of the input does not fit max_pending_bytes:
  // appends the protocol's refusal, if it has one to send; the connection
  // closes once it is written.
  virtual void refuse_oversized(std::string& output) { (void)output; }
  // Whether the connection may make calls that need the token: true from
  // the start when no token is set or the peer is trusted.
  virtual bool authenticated() const = 0;
};

// A stream listener's own metrics: its connections and, for protocols with
// named commands, how often each was called. Rendered into /metrics.
class StreamMetrics : public MetricsSource {
 public:
  // `commands`: the names counted by index (count_command); the last one
  // stands for every other name.
  StreamMetrics(std::string protocol, std::vector<std::string> commands);

  void count_command(std::size_t index) {
    commands_[index < names_.size() ? index : names_.size() - 1].fetch_add(
        1, std::memory_order_relaxed);
  }
  const std::string& protocol() const { return protocol_; }
  std::atomic<std::int64_t>& open_connections() { return open_; }
  std::atomic<std::uint64_t>& refused_connections() { return refused_; }
  // Open connections not yet authenticated.
  std::atomic<std::int64_t>& unauthenticated_connections() { return unauthenticated_; }
  // New connections refused because unauthenticated ones held their share
  // and none could be displaced.
  std::atomic<std::uint64_t>& refused_unauthenticated() { return refused_unauthenticated_; }
  // Unauthenticated connections closed to make room for a new one.
  std::atomic<std::uint64_t>& evicted_unauthenticated() { return evicted_unauthenticated_; }
  // Connections closed at auth_timeout, still unauthenticated.
  std::atomic<std::uint64_t>& auth_timeouts() { return auth_timeouts_; }

  void render(std::string& out) const override;

 private:
  std::string protocol_;
  std::vector<std::string> names_;
  std::unique_ptr<std::atomic<std::uint64_t>[]> commands_;
  std::atomic<std::int64_t> open_{0};
  std::atomic<std::uint64_t> refused_{0};
  std::atomic<std::int64_t> unauthenticated_{0};
  std::atomic<std::uint64_t> refused_unauthenticated_{0};
  std::atomic<std::uint64_t> evicted_unauthenticated_{0};
  std::atomic<std::uint64_t> auth_timeouts_{0};
};

class StreamServer final : public Listener {
 public:
  // Makes a connection's handler; `trusted`: its peer is in
  // trusted_networks, so it is authenticated from the start.
  using NewHandler = std::function<std::unique_ptr<StreamHandler>(bool trusted)>;
  // Whether the first request in `bytes`, the start of what a connection
  // sent before it was admitted (which may end anywhere), is one that
  // authenticates; nullopt while that cannot be told yet. Thread-safe.
  using FirstRequestAuthenticates = std::function<std::optional<bool>(std::string_view bytes)>;

  // `protocol` names the listener ("thrift", "resp"); `options.endpoint` is
  // set. `new_handler` makes each connection's handler (on its thread).
  // `over_limit_answer` is written to a connection refused at the connection
  // limit before it is closed ("" to close it without a word).
  // `first_request_authenticates` tells the unauthenticated share which new
  // connections authenticate at once (none if empty).
  StreamServer(boost::asio::io_context& acceptor_io, IdService& service, std::string protocol,
               StreamListenerOptions options, std::shared_ptr<StreamMetrics> metrics,
               NewHandler new_handler, std::string over_limit_answer = "",
               FirstRequestAuthenticates first_request_authenticates = nullptr);
  ~StreamServer() override;

  std::string_view protocol() const override { return protocol_; }
  Result<Endpoint> start(const DescriptorBudget& descriptors) override;
  void stop_accepting() override;
  std::int64_t open_connections() const override;
  void set_connection_limit(std::int64_t max_connections) override;
  void stop() override;

 private:
  struct Impl;
  std::string protocol_;
  std::shared_ptr<Impl> impl_;
};

}  // namespace snowid::server
