#include "stream_server.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>

#include <array>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/asio/write.hpp>

#include "connection_workers.h"
#include "tls_context.h"
#include "trusted_networks.h"
#include "unauthenticated_share.h"

namespace snowid::server {

namespace asio = boost::asio;
namespace ssl = asio::ssl;
using tcp = asio::ip::tcp;
using TlsStream = ssl::stream<tcp::socket>;

namespace {

// How long a connection closing after its last answer keeps reading what
// the client still sends (see StreamSession::linger).
constexpr std::chrono::seconds kLingerTime{2};

// What one read takes at most; a session holds a buffer of this size.
constexpr std::size_t kReadChunkBytes = 4 * 1024;

// What the acceptor looks at of a new unauthenticated connection's first
// bytes: enough for the name of its first request.
constexpr std::size_t kPeekedBytes = 256;

}  // namespace

StreamMetrics::StreamMetrics(std::string protocol, std::vector<std::string> commands)
    : protocol_(std::move(protocol)),
      names_(std::move(commands)),
      commands_(new std::atomic<std::uint64_t>[names_.size()]) {
  for (std::size_t i = 0; i < names_.size(); ++i) commands_[i] = 0;
}

void StreamMetrics::render(std::string& out) const {
  const std::string& p = protocol_;
  fmt::format_to(std::back_inserter(out),
                 "# HELP snowid_{0}_open_connections Open {0} connections.\n"
                 "# TYPE snowid_{0}_open_connections gauge\n"
                 "snowid_{0}_open_connections {1}\n"
                 "# HELP snowid_{0}_refused_connections_total {0} connections refused at "
                 "{0}_max_connections.\n"
                 "# TYPE snowid_{0}_refused_connections_total counter\n"
                 "snowid_{0}_refused_connections_total {2}\n"
                 "# HELP snowid_{0}_unauthenticated_connections Open {0} connections not yet "
                 "authenticated.\n"
                 "# TYPE snowid_{0}_unauthenticated_connections gauge\n"
                 "snowid_{0}_unauthenticated_connections {3}\n"
                 "# HELP snowid_{0}_refused_unauthenticated_total {0} connections refused "
                 "because unauthenticated ones held their share ({0}_unauthenticated_share) "
                 "and none could be closed to make room.\n"
                 "# TYPE snowid_{0}_refused_unauthenticated_total counter\n"
                 "snowid_{0}_refused_unauthenticated_total {4}\n"
                 "# HELP snowid_{0}_evicted_unauthenticated_total Unauthenticated {0} "
                 "connections closed to make room for a new one.\n"
                 "# TYPE snowid_{0}_evicted_unauthenticated_total counter\n"
                 "snowid_{0}_evicted_unauthenticated_total {5}\n"
                 "# HELP snowid_{0}_auth_timeouts_total {0} connections closed for not "
                 "authenticating within {0}_auth_timeout_ms.\n"
                 "# TYPE snowid_{0}_auth_timeouts_total counter\n"
                 "snowid_{0}_auth_timeouts_total {6}\n",
                 p, open_.load(), refused_.load(), unauthenticated_.load(),
                 refused_unauthenticated_.load(), evicted_unauthenticated_.load(),
                 auth_timeouts_.load());
  if (names_.empty()) return;
  fmt::format_to(std::back_inserter(out),
                 "# HELP snowid_{0}_commands_total {0} commands received, by name.\n"
                 "# TYPE snowid_{0}_commands_total counter\n",
                 p);
  for (std::size_t i = 0; i < names_.size(); ++i) {
    fmt::format_to(std::back_inserter(out), "snowid_{}_commands_total{{command=\"{}\"}} {}\n", p,
                   names_[i], commands_[i].load(std::memory_order_relaxed));
  }
}

namespace {

// One connection over `Stream`: a TCP socket, or a TLS stream over one
// (whose handshake comes first, within the read timeout). See
// stream_server.h for its life.
template <typename Stream>
class StreamSession : public Connection,
                      public std::enable_shared_from_this<StreamSession<Stream>> {
 public:
  static constexpr bool kTls = std::is_same_v<Stream, TlsStream>;

  // `share_member`: its slot in `share` if it is unauthenticated (null if
  // not), then counted in metrics' unauthenticated_connections too; the
  // session gives both back once its handler authenticated.
  StreamSession(Stream socket, Worker& worker, IdService& service,
                const StreamListenerOptions& options, StreamMetrics& metrics,
                std::unique_ptr<StreamHandler> handler, UnauthenticatedShare& share,
                UnauthenticatedShare::Handle share_member)
      : socket_(std::move(socket)),
        worker_(worker),
        service_(service),
        options_(options),
        metrics_(metrics),
        handler_(std::move(handler)),
        share_(share),
        share_member_(std::move(share_member)),
        unauthenticated_(share_member_ != nullptr) {
    position_ = worker_.connections.insert(worker_.connections.end(), this);
  }
  ~StreamSession() override {
    worker_.connections.erase(position_);
    if (unauthenticated_) {
      share_.leave(share_member_);
      metrics_.unauthenticated_connections().fetch_sub(1);
    }
    metrics_.open_connections().fetch_sub(1, std::memory_order_relaxed);
  }

  void start() {
    if (unauthenticated_) auth_deadline_ = std::chrono::steady_clock::now() + options_.auth_timeout;
    if constexpr (kTls) {
      // A client that sends no TLS hello (plain text, or nothing) fails or
      // times out here; nothing of it reaches the handler.
      set_deadline(std::chrono::steady_clock::now() + service_.config().net.read_timeout);
      socket_.async_handshake(ssl::stream_base::server,
                              [self = this->shared_from_this()](const boost::system::error_code& ec) {
                                if (ec) {
                                  spdlog::debug("{}: TLS handshake failed: {}",
                                                self->metrics_.protocol(), ec.message());
                                  return self->close();
                                }
                                self->wait_for_request();
                              });
      return;
    }
    wait_for_request();
  }

  // At its deadline; counted if it is the authentication one.
  void expire() override {
    if (unauthenticated_ && std::chrono::steady_clock::now() >= auth_deadline_) {
      spdlog::debug("{}: closing a connection that did not authenticate within {} ms",
                    metrics_.protocol(), options_.auth_timeout.count());
      metrics_.auth_timeouts().fetch_add(1, std::memory_order_relaxed);
    }
    close();
  }

  // Calls evict() if the session still exists; to be called on its thread.
  std::function<void()> evicter() {
    return [weak = this->weak_from_this()] {
      if (auto self = weak.lock()) self->evict();
    };
  }

  // Its slot of the unauthenticated share went to a new connection
  // (unauthenticated_share.h): closes it unless it authenticated since.
  void evict() {
    if (!unauthenticated_ || closed_) return;
    spdlog::debug("{}: closing an unauthenticated connection to make room for a new one",
                  metrics_.protocol());
    metrics_.evicted_unauthenticated().fetch_add(1, std::memory_order_relaxed);
    close();
  }

  void close() override {
    if (closed_) return;
    closed_ = true;
    // Out of the share before its descriptor closes: the share looks at the
    // connections it holds (UnauthenticatedShare::admit's `look`).
    if (unauthenticated_) share_.leave(share_member_);
    boost::system::error_code ignored;
    tcp_socket().shutdown(tcp::socket::shutdown_send, ignored);
    tcp_socket().close(ignored);
  }

 private:
  void wait_for_request() {
    if (worker_.draining.load(std::memory_order_relaxed)) return close();
    idle_ = true;
    const auto idle = options_.idle_timeout;
    set_deadline(idle.count() == 0 ? SteadyTime::max() : std::chrono::steady_clock::now() + idle);
    read();
  }

  void read() {
    if (in_.size() >= options_.max_pending_bytes) {
      // A request that does not fit: it cannot be answered, nor skipped.
      spdlog::debug("{}: closing a connection whose request exceeds {} bytes", metrics_.protocol(),
                    options_.max_pending_bytes);
      handler_->refuse_oversized(out_);
      close_after_write_ = true;
      return out_.empty() ? close() : write();
    }
    // Read into a buffer of the session's own, then append what came: the
    // input buffer is never grown (and zero-filled) ahead of the bytes.
    const std::size_t room =
        std::min<std::size_t>(read_chunk_.size(), options_.max_pending_bytes - in_.size());
    socket_.async_read_some(
        asio::buffer(read_chunk_.data(), room),
        [self = this->shared_from_this()](const boost::system::error_code& ec, std::size_t bytes) {
          if (ec) return self->close();  // end, reset, timeout, shutdown
          self->in_.append(self->read_chunk_.data(), bytes);
          if (self->idle_) {
            // A request has begun: the read timeout applies to it.
            self->idle_ = false;
            self->set_deadline(std::chrono::steady_clock::now() +
                               self->service_.config().net.read_timeout);
          }
          self->answer();
        });
  }

  // Answers what is complete in the buffer, on this thread or, if a request
  // may wait for the clock, on a waiter thread (then nothing else of this
  // connection runs meanwhile: reading stops, the sweeper may only close).
  void answer() {
    if (worker_.waiters != nullptr && service_.node().generator().may_wait_for_clock()) {
      set_deadline(std::chrono::steady_clock::now() + service_.config().generator.max_wait +
                   service_.config().net.read_timeout);
      asio::post(*worker_.waiters, [self = this->shared_from_this()]() mutable {
        const StreamHandler::Step step = self->handler_->consume(self->in_, self->out_);
        // The reference moves back with the answer: the waiter thread must
        // never hold the last one (the session must leave its worker's list
        // on its connection thread).
        auto executor = self->socket_.get_executor();
        asio::post(executor, [self = std::move(self), step] { self->after(step); });
      });
      return;
    }
    after(handler_->consume(in_, out_));
  }

  void after(const StreamHandler::Step& step) {
    if (closed_) return;
    if (unauthenticated_ && handler_->authenticated()) {
      unauthenticated_ = false;
      auth_deadline_ = SteadyTime::max();
      share_.leave(share_member_);
      metrics_.unauthenticated_connections().fetch_sub(1);
    } else if (unauthenticated_ && !spent_) {
      // Its first bytes were answered without authenticating it.
      spent_ = true;
      share_.spent(share_member_);
    }
    in_.erase(0, step.consumed);
    close_after_write_ = close_after_write_ || step.close;
    if (!out_.empty()) return write();
    if (close_after_write_) return close();
    if (in_.empty()) return wait_for_request();
    read();
  }

  void write() {
    set_deadline(std::chrono::steady_clock::now() + service_.config().net.read_timeout);
    asio::async_write(
        socket_, asio::buffer(out_),
        [self = this->shared_from_this()](const boost::system::error_code& ec, std::size_t) {
          self->out_.clear();
          if (ec) return self->close();
          if (self->close_after_write_) return self->linger();
          // Pipelined requests left over from a full write first.
          if (!self->in_.empty()) return self->answer();
          self->wait_for_request();
        });
  }

  // After the last answer: ends the sending side and reads (and drops)
  // what the client still sends until it closes, or for kLingerTime at
  // most. Closing at once with unread bytes would reset the connection, and
  // a reset can discard the answer before the client reads it.
  // Over TLS the bytes read are records, dropped undecrypted: the client's
  // own close then ends the wait, as over plain TCP.
  void linger() {
    boost::system::error_code ignored;
    tcp_socket().shutdown(tcp::socket::shutdown_send, ignored);
    idle_ = false;
    set_deadline(std::min(deadline_, std::chrono::steady_clock::now() + kLingerTime));
    tcp_socket().async_read_some(
        asio::buffer(read_chunk_),
        [self = this->shared_from_this()](const boost::system::error_code& ec, std::size_t) {
          if (ec) return self->close();
          self->linger();
        });
  }

  // The TCP socket under the stream.
  tcp::socket& tcp_socket() {
    if constexpr (kTls) {
      return socket_.next_layer();
    } else {
      return socket_;
    }
  }

  // Every deadline of an unauthenticated connection comes at
  // auth_deadline_ at the latest.
  void set_deadline(SteadyTime deadline) { deadline_ = std::min(deadline, auth_deadline_); }

  Stream socket_;
  Worker& worker_;
  IdService& service_;
  const StreamListenerOptions& options_;
  StreamMetrics& metrics_;
  std::unique_ptr<StreamHandler> handler_;
  UnauthenticatedShare& share_;
  const UnauthenticatedShare::Handle share_member_;
  bool unauthenticated_;
  bool spent_ = false;  // share_.spent() was called
  SteadyTime auth_deadline_ = SteadyTime::max();
  std::list<Connection*>::iterator position_;
  std::array<char, kReadChunkBytes> read_chunk_;
  std::string in_;
  std::string out_;
  bool close_after_write_ = false;
  bool closed_ = false;
};

}  // namespace

struct StreamServer::Impl : std::enable_shared_from_this<StreamServer::Impl> {
  Impl(IdService& id_service, std::string name, StreamListenerOptions listener_options,
       std::shared_ptr<StreamMetrics> listener_metrics, NewHandler make_handler,
       std::string refusal, FirstRequestAuthenticates authenticates)
      : service(id_service),
        protocol(std::move(name)),
        options(std::move(listener_options)),
        metrics(std::move(listener_metrics)),
        new_handler(std::move(make_handler)),
        over_limit_answer(std::move(refusal)),
        first_request_authenticates(std::move(authenticates)),
        token_required(id_service.tokens_required()),
        // check_stream_listener() accepted the option.
        trusted_networks(TrustedNetworks::parse(options.trusted_networks).value()) {}

  // Evicts the session a connection becomes (StreamSession::evict): set on
  // its worker's thread when the session is made there, called only there.
  using EvictSession = std::shared_ptr<std::function<void()>>;

  // On the acceptor's thread; the connection then moves to `worker`.
  void admit(tcp::socket socket, Worker& worker) {
    boost::system::error_code ec;
    const auto peer = socket.remote_endpoint(ec);
    const bool trusted = !ec && trusted_networks.contains(peer.address());
    const std::int64_t limit = max_connections.load(std::memory_order_relaxed);
    auto evict_session = std::make_shared<std::function<void()>>();
    UnauthenticatedShare::Handle member;
    if (token_required && !trusted) {
      const std::string source = ec ? std::string() : peer.address().to_string();
      member = take_unauthenticated_slot(socket, source, limit, worker, evict_session);
      if (member == nullptr) return refuse(std::move(socket));
      metrics->unauthenticated_connections().fetch_add(1);
    } else if (!take_connection(limit)) {
      metrics->refused_connections().fetch_add(1, std::memory_order_relaxed);
      return refuse(std::move(socket));
    }
    // A weak reference: a hand-over still queued when the worker stops is
    // destroyed with the worker's io_context, which the Impl owns. Posted
    // before any eviction of this connection, so it runs before one.
    asio::post(worker.io, [weak = weak_from_this(), &worker, trusted, evict_session, member,
                           socket = std::make_shared<tcp::socket>(std::move(socket))]() mutable {
      auto self = weak.lock();
      if (!self) return;
      boost::system::error_code ignored;  // on the worker: the acceptor has enough to do
      socket->set_option(tcp::no_delay(true), ignored);
      if (self->tls) {
        self->open_session<TlsStream>(TlsStream(std::move(*socket), *self->tls), worker, trusted,
                                      evict_session, member);
      } else {
        self->open_session<tcp::socket>(std::move(*socket), worker, trusted, evict_session, member);
      }
    });
  }

  // On the worker's thread.
  template <typename Stream>
  void open_session(Stream stream, Worker& worker, bool trusted,
                    const EvictSession& evict_session, const UnauthenticatedShare::Handle& member) {
    auto made = std::make_shared<StreamSession<Stream>>(std::move(stream), worker, service,
                                                        options, *metrics, new_handler(trusted),
                                                        share, member);
    *evict_session = made->evicter();
    made->start();
  }

  // A slot of the unauthenticated share for a new connection from `source`
  // (an address; "" if unknown), displacing a member if need be
  // (unauthenticated_share.h): its handle, or null (counted) if it is
  // refused.
  //
  // While the share is full (churn), the last `slots` connections of the
  // listener's limit are kept for a newcomer whose first request
  // authenticates: connections closed to make room, but not yet closed by
  // their threads (busy with the churn), cannot keep such a client out.
  UnauthenticatedShare::Handle take_unauthenticated_slot(tcp::socket& socket,
                                                         const std::string& source,
                                                         std::int64_t limit, Worker& worker,
                                                         const EvictSession& evict_session) {
    const std::int64_t slots = unauthenticated_slots(options, limit);
    const int descriptor = socket.native_handle();
    const UnauthenticatedShare::Standing standing = standing_of(descriptor);
    const bool kept =
        share.full(source, slots) && standing != UnauthenticatedShare::Standing::kAuthenticating;
    if (!take_connection(limit - (kept ? slots : 0))) {
      (kept ? metrics->refused_unauthenticated() : metrics->refused_connections())
          .fetch_add(1, std::memory_order_relaxed);
      return nullptr;
    }
    const auto evict = [&worker, evict_session] {
      // On the member's own worker, after the hand-over that made it.
      asio::post(worker.io, [evict_session] {
        if (*evict_session) (*evict_session)();
      });
    };
    // Called while the member is held, so its descriptor is still open
    // (StreamSession::close leaves the share first).
    const auto look = [this, descriptor] { return standing_of(descriptor); };
    auto admission = share.admit(source, standing, slots, evict, look);
    if (admission.evict) admission.evict();
    if (admission.member == nullptr) {
      metrics->open_connections().fetch_sub(1, std::memory_order_relaxed);
      metrics->refused_unauthenticated().fetch_add(1, std::memory_order_relaxed);
    }
    return std::move(admission.member);
  }

  // Counts one more open connection unless `bound` are open already (then
  // false). Only the acceptor's thread adds to the count.
  bool take_connection(std::int64_t bound) {
    if (metrics->open_connections().load() >= bound) return false;
    metrics->open_connections().fetch_add(1, std::memory_order_relaxed);
    return true;
  }

  // A connection's standing in the share, from the first bytes it sent, if
  // any arrived and are not read yet (peeked: they stay for its handler).
  // Over TLS the first bytes are a handshake, which tells nothing: silent.
  UnauthenticatedShare::Standing standing_of(int descriptor) const {
    if (tls) return UnauthenticatedShare::Standing::kSilent;
    std::array<char, kPeekedBytes> first;
    const ssize_t got = ::recv(descriptor, first.data(), first.size(), MSG_PEEK | MSG_DONTWAIT);
    if (got <= 0 || !first_request_authenticates) return UnauthenticatedShare::Standing::kSilent;
    const std::optional<bool> authenticates =
        first_request_authenticates(std::string_view(first.data(), static_cast<std::size_t>(got)));
    if (!authenticates) return UnauthenticatedShare::Standing::kSilent;
    return *authenticates ? UnauthenticatedShare::Standing::kAuthenticating
                          : UnauthenticatedShare::Standing::kSpent;
  }

  // At once, on the acceptor's thread: the answer fits a new connection's
  // empty send buffer. A TLS client is closed without a word (the answer
  // would be plain text in the middle of its handshake).
  void refuse(tcp::socket socket) {
    boost::system::error_code ignored;
    socket.non_blocking(true, ignored);
    if (!over_limit_answer.empty() && !tls) {
      socket.write_some(asio::buffer(over_limit_answer), ignored);
    }
    socket.close(ignored);
  }

  IdService& service;
  std::string protocol;
  StreamListenerOptions options;
  std::shared_ptr<StreamMetrics> metrics;
  NewHandler new_handler;
  std::string over_limit_answer;
  FirstRequestAuthenticates first_request_authenticates;
  bool token_required;
  TrustedNetworks trusted_networks;
  // Loaded by start() when options.tls is set; null for plain text.
  std::unique_ptr<ssl::context> tls;
  std::shared_ptr<TcpAcceptor> acceptor;
  // Which unauthenticated connections hold slots; declared before `workers`,
  // whose sessions leave it as they are destroyed.
  UnauthenticatedShare share;
  // The listener's share of the open-file limit, which may change while it
  // serves (descriptor_budget.h).
  std::atomic<std::int64_t> max_connections{1};
  // Requests that may wait for the clock (wait policy) run here.
  asio::thread_pool waiters{2};
  WorkerPool workers;
};

StreamServer::StreamServer(asio::io_context& acceptor_io, IdService& service, std::string protocol,
                           StreamListenerOptions options, std::shared_ptr<StreamMetrics> metrics,
                           NewHandler new_handler, std::string over_limit_answer,
                           FirstRequestAuthenticates first_request_authenticates)
    : protocol_(protocol),
      impl_(std::make_shared<Impl>(service, std::move(protocol), std::move(options),
                                   std::move(metrics), std::move(new_handler),
                                   std::move(over_limit_answer),
                                   std::move(first_request_authenticates))) {
  impl_->acceptor =
      std::make_shared<TcpAcceptor>(acceptor_io, protocol_, impl_->workers,
                                    [impl = impl_.get()](tcp::socket socket, Worker& worker) {
                                      impl->admit(std::move(socket), worker);
                                    });
}

StreamServer::~StreamServer() { stop(); }

Result<Endpoint> StreamServer::start(const DescriptorBudget& descriptors) {
  const ServiceConfig& config = impl_->service.config();
  const Endpoint& wanted = *impl_->options.endpoint;
  if (impl_->options.tls) {
    auto tls = load_tls(config.net);
    if (!tls.ok()) return tls.error();
    impl_->tls = std::move(*tls);
  }
  auto port = impl_->acceptor->listen(wanted);
  if (!port.ok()) return port.error();
  impl_->max_connections = descriptors.connections_for(protocol_);
  impl_->service.add_metrics_source(impl_->metrics);
  const bool may_wait = config.generator.clock_policy == ClockPolicy::kWait;
  impl_->workers.start(config.net.io_threads, may_wait ? &impl_->waiters : nullptr);
  impl_->acceptor->start();
  return Endpoint{wanted.host, *port};
}

void StreamServer::stop_accepting() {
  impl_->acceptor->close();
  impl_->workers.drain();
}

void StreamServer::set_connection_limit(std::int64_t max_connections) {
  impl_->max_connections.store(max_connections);
}

std::int64_t StreamServer::open_connections() const {
  return impl_->metrics->open_connections().load();
}

void StreamServer::stop() {
  impl_->workers.stop();
  impl_->waiters.join();
}

}  // namespace snowid::server
