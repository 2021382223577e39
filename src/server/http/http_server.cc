#include "http_server.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/stream_traits.hpp>
#include <list>
#include <optional>
#include <thread>
#include <vector>

#include "connection_workers.h"
#include "http_metrics.h"
#include "http_request_parser.h"
#include "http_routes.h"
#include "tls_context.h"

namespace snowid::server {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace ssl = asio::ssl;

namespace {

// As in claim_responder.cc: the same aliases, so that the two files may be
// compiled in one batch.
using tcp = asio::ip::tcp;
using TlsStream = ssl::stream<tcp::socket>;

// Responses to pipelined requests are gathered up to this size, then written.
constexpr std::size_t kMaxGatheredResponseBytes = 64 * 1024;

// One connection over Stream (a TCP socket, or TLS over one). Reads into its
// buffer, parses every complete request in it (pipelined requests are
// answered in order, their responses gathered into one write), writes, and
// reads again. Closes on a malformed request (after answering it), on
// "Connection: close", on the peer closing, or at its deadline.
template <typename Stream>
class Session : public Connection, public std::enable_shared_from_this<Session<Stream>> {
 public:
  Session(Stream stream, Worker& worker, IdService& service, HttpMetrics& metrics,
          const HttpOptions& options)
      : stream_(std::move(stream)), worker_(worker), service_(service), metrics_(metrics),
        in_(max_buffered_request_bytes(options)), reader_(options) {
    position_ = worker_.connections.insert(worker_.connections.end(), this);
  }
  ~Session() override {
    worker_.connections.erase(position_);
    service_.metrics().connection_closed();
  }

  void start() {
    if constexpr (std::is_same_v<Stream, tcp::socket>) {
      wait_for_request();
    } else {
      deadline_ = std::chrono::steady_clock::now() + service_.config().net.read_timeout;
      stream_.async_handshake(ssl::stream_base::server,
                              [self = this->shared_from_this()](beast::error_code ec) {
                                if (ec) return self->close();
                                self->wait_for_request();
                              });
    }
  }

  void close() override {
    if (closed_) return;
    closed_ = true;
    beast::error_code ignored;
    auto& socket = beast::get_lowest_layer(stream_);
    socket.shutdown(tcp::socket::shutdown_send, ignored);
    socket.close(ignored);
  }

 private:
  // Between requests: the idle timeout applies until a byte arrives.
  void wait_for_request() {
    if (worker_.draining.load(std::memory_order_relaxed)) return close();
    idle_ = true;
    deadline_ = std::chrono::steady_clock::now() + service_.config().net.idle_timeout;
    read();
  }

  void read() {
    if (in_.size() >= in_.max_size()) return reject(431, "request header too large");
    const std::size_t room = std::min(kReadChunkBytes, in_.max_size() - in_.size());
    stream_.async_read_some(in_.prepare(room),
                            [self = this->shared_from_this()](beast::error_code ec,
                                                              std::size_t bytes) {
                              self->on_read(ec, bytes);
                            });
  }

  void on_read(beast::error_code ec, std::size_t bytes) {
    if (ec) return close();  // end of stream, reset, timeout or shutdown
    in_.commit(bytes);
    if (idle_) {
      // A request has begun: from now on the read timeout applies to it.
      idle_ = false;
      deadline_ = std::chrono::steady_clock::now() + service_.config().net.read_timeout;
    }
    parse_and_answer();
  }

  // Parses and answers the complete requests in the buffer, then writes the
  // answers, or reads more if there is nothing to write.
  void parse_and_answer() {
    while (!close_after_write_ && out_.size() < kMaxGatheredResponseBytes && in_.size() > 0) {
      const RequestReader::Outcome outcome = reader_.read(in_);
      if (outcome == RequestReader::Outcome::kNeedMore) break;
      if (outcome == RequestReader::Outcome::kRefused) {
        append_error(reader_.refusal().status, reader_.refusal().message);
        break;
      }
      if (may_wait_for_clock()) return answer_off_thread();  // resumes this loop when done
      answer();
    }
    if (!out_.empty()) return write();
    if (close_after_write_) return close();
    if (reader_.between_requests() && in_.size() == 0) return wait_for_request();
    read();
  }

  void answer() {
    const SteadyTime begin = std::chrono::steady_clock::now();
    handle_http(service_, request_view(reader_.request()), response_);
    finish_answer(begin);
  }

  // Whether the request just read may wait for the clock (wait policy, clock
  // behind): then it must not hold this thread, which serves other
  // connections too (/healthz among them).
  bool may_wait_for_clock() const {
    return worker_.waiters != nullptr && issues_ids(std_view(reader_.request().target())) &&
           service_.node().generator().may_wait_for_clock();
  }

  // Answers the request on a waiter thread, then goes on here. Nothing else
  // of this connection runs meanwhile: reading stops, so the request read
  // stays valid, and the sweeper may only close the socket.
  void answer_off_thread() {
    off_thread_ = true;
    deadline_ = std::chrono::steady_clock::now() + service_.config().generator.max_wait +
                service_.config().net.read_timeout;
    asio::post(*worker_.waiters, [self = this->shared_from_this()]() mutable {
      const SteadyTime begin = std::chrono::steady_clock::now();
      handle_http(self->service_, request_view(self->reader_.request()), self->response_);
      // The reference moves back with the answer: the waiter thread must
      // never hold the last one, or the session would be destroyed here,
      // off its connection thread, and leave its worker's list from here.
      auto executor = self->stream_.get_executor();
      asio::post(executor, [self = std::move(self), begin] {
        self->off_thread_ = false;
        if (self->abandoned_) return;  // answered 503 while draining (drain())
        self->finish_answer(begin);
        if (self->closed_) return;
        self->parse_and_answer();
      });
    });
  }

  // While draining (SIGTERM), at every sweep: an idle connection closes; a
  // request waiting for the clock on a waiter thread is answered 503 now,
  // with the reason, as a gRPC call gets UNAVAILABLE (the waiter's answer is
  // then dropped; IDs it drew are never sent, as for a client that left).
  void drain() override {
    if (idle()) return close();
    if (!off_thread_ || abandoned_ || closed_) return;
    abandoned_ = true;
    HttpResponse refusal;
    set_error(refusal, 503,
              "the server is shutting down: the request waited for the clock and was not "
              "answered; retry it, on another node if there is one");
    append_response(refusal, 11, false);
    metrics_.count(Route::kOther, 503, std::chrono::nanoseconds{0});
    close_after_write_ = true;
    write();
  }

  void finish_answer(SteadyTime begin) {
    const auto& request = reader_.request();
    const bool keep_alive =
        request.keep_alive() && !worker_.draining.load(std::memory_order_relaxed);
    append_response(response_, request.version(), keep_alive);
    const auto latency = std::chrono::steady_clock::now() - begin;
    metrics_.count(response_.route, response_.status, latency);
    if (auto call = call_of(response_.route)) {
      service_.count_since(Protocol::kHttp, *call, response_.outcome, begin);
    }
    if (!keep_alive) close_after_write_ = true;
  }

  // A request the parser refused: answer it and close, since the stream can
  // no longer be trusted to frame the next request.
  void append_error(unsigned status, std::string_view message) {
    response_.reset();
    set_error(response_, status, message);
    append_response(response_, 11, false);
    metrics_.count(Route::kOther, status, std::chrono::nanoseconds{0});
    close_after_write_ = true;
  }

  void append_response(const HttpResponse& response, unsigned version, bool keep_alive) {
    const auto status = static_cast<http::status>(response.status);
    fmt::format_to(std::back_inserter(out_),
                   "HTTP/1.{} {} {}\r\nServer: snowid\r\nContent-Type: {}\r\n",
                   version == 10 ? 0 : 1, response.status, std_view(http::obsolete_reason(status)),
                   response.content_type);
    if (!response.length_unknown) {
      fmt::format_to(std::back_inserter(out_), "Content-Length: {}\r\n", response.body.size());
    }
    for (const auto& [name, value] : response.headers) {
      out_.append(name).append(": ").append(value).append("\r\n");
    }
    if (!keep_alive) {
      out_ += "Connection: close\r\n";
    } else if (version == 10) {
      out_ += "Connection: keep-alive\r\n";
    }
    out_ += "\r\n";
    if (!response.head) out_ += response.body;  // a HEAD response has no content
  }

  void write() {
    deadline_ = std::chrono::steady_clock::now() + service_.config().net.read_timeout;
    asio::async_write(stream_, asio::buffer(out_),
                      [self = this->shared_from_this()](beast::error_code ec, std::size_t) {
                        self->out_.clear();
                        if (ec || self->close_after_write_) return self->close();
                        self->parse_and_answer();
                      });
  }

  void reject(unsigned status, std::string_view message) {
    append_error(status, message);
    write();
  }

  Stream stream_;
  Worker& worker_;
  IdService& service_;
  HttpMetrics& metrics_;
  std::list<Connection*>::iterator position_;
  beast::flat_buffer in_;
  RequestReader reader_;
  HttpResponse response_;
  std::string out_;
  bool close_after_write_ = false;
  bool closed_ = false;
  bool off_thread_ = false;  // a request is being answered on a waiter thread
  bool abandoned_ = false;   // ...and was answered 503 by drain() meanwhile
};

}  // namespace

struct HttpServer::Impl : std::enable_shared_from_this<HttpServer::Impl> {
  Impl(IdService& id_service, HttpOptions http_options)
      : service(id_service), options(std::move(http_options)) {}

  // Runs on the acceptor's thread; the connection then moves to `worker`.
  void admit(tcp::socket socket, Worker& worker) {
    Metrics& metrics = service.metrics();
    if (metrics.open_connections() >= max_connections) {
      metrics.connection_refused();
      refuse(std::move(socket));
      return;
    }
    metrics.connection_opened();
    beast::error_code ignored;
    socket.set_option(tcp::no_delay(true), ignored);
    // A weak reference: a hand-over still queued when the worker stops is
    // destroyed with the worker's io_context, which the Impl owns.
    asio::post(worker.io, [weak = weak_from_this(), &worker,
                           socket = std::make_shared<tcp::socket>(std::move(socket))]() mutable {
      auto self = weak.lock();
      if (!self) return;
      if (self->tls) {
        std::make_shared<Session<TlsStream>>(TlsStream(std::move(*socket), *self->tls), worker,
                                             self->service, *self->http_metrics, self->options)
            ->start();
      } else {
        std::make_shared<Session<tcp::socket>>(std::move(*socket), worker, self->service,
                                               *self->http_metrics, self->options)
            ->start();
      }
    });
  }

  // Over plain HTTP, a short answer and close, so the client learns why; a
  // TLS client is simply closed. Done at once, on the acceptor's thread: the
  // answer fits a new connection's empty send buffer, and a refused
  // connection, in a flood of them, holds its descriptor no longer than this.
  void refuse(tcp::socket socket) {
    static const std::string kRefusal = [] {
      const std::string body = "{\"error\":\"too many open connections\"}\n";
      return fmt::format(
          "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n"
          "Connection: close\r\nContent-Length: {}\r\n\r\n{}",
          body.size(), body);
    }();
    beast::error_code ignored;
    if (!tls) {
      socket.non_blocking(true, ignored);
      socket.write_some(asio::buffer(kRefusal), ignored);
      socket.shutdown(tcp::socket::shutdown_both, ignored);
    }
    socket.close(ignored);
  }

  IdService& service;
  const HttpOptions options;
  // Requests by route and status, added to the service's /metrics by start().
  std::shared_ptr<HttpMetrics> http_metrics = std::make_shared<HttpMetrics>();
  std::shared_ptr<TcpAcceptor> acceptor;
  std::unique_ptr<ssl::context> tls;
  // max_connections as the open-file limit allows (descriptor_budget.h)
  std::atomic<std::int64_t> max_connections{0};
  // Requests that may wait for the clock (wait policy) run here, off the
  // workers' threads; each waits at most max_wait.
  asio::thread_pool waiters{4};
  WorkerPool workers;
};

HttpServer::HttpServer(asio::io_context& acceptor_io, IdService& service, HttpOptions options)
    : impl_(std::make_shared<Impl>(service, std::move(options))) {
  impl_->acceptor =
      std::make_shared<TcpAcceptor>(acceptor_io, "http", impl_->workers,
                                    [impl = impl_.get()](tcp::socket socket, Worker& worker) {
                                      impl->admit(std::move(socket), worker);
                                    });
}

HttpServer::~HttpServer() { stop(); }

Result<Endpoint> HttpServer::start(const DescriptorBudget& descriptors) {
  const ServiceConfig& config = impl_->service.config();
  const HttpOptions& http = impl_->options;
  if (!config.net.tls_cert.empty()) {
    auto tls = load_tls(config.net);
    if (!tls.ok()) return tls.error();
    impl_->tls = std::move(*tls);
  }
  auto port = impl_->acceptor->listen(http.endpoint);
  if (!port.ok()) return port.error();
  impl_->max_connections = descriptors.connections_for("http");
  impl_->service.add_metrics_source(impl_->http_metrics);
  const bool may_wait = config.generator.clock_policy == ClockPolicy::kWait;
  impl_->workers.start(config.net.io_threads, may_wait ? &impl_->waiters : nullptr);
  impl_->acceptor->start();
  return Endpoint{http.endpoint.host, *port};
}

void HttpServer::stop_accepting() {
  impl_->acceptor->close();
  impl_->workers.drain();
}

void HttpServer::set_connection_limit(std::int64_t max_connections) {
  impl_->max_connections.store(max_connections);
}

std::int64_t HttpServer::open_connections() const {
  return impl_->service.metrics().open_connections();
}

void HttpServer::stop() {
  impl_->workers.stop();
  impl_->waiters.join();
}

}  // namespace snowid::server
