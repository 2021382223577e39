#include "claim_responder.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/stream_traits.hpp>
#include <nlohmann/json.hpp>
#include <thread>

#include "http_request_parser.h"
#include "tls_context.h"

namespace snowid::server {
namespace {

namespace asio = boost::asio;
namespace ssl = asio::ssl;
using tcp = asio::ip::tcp;
using TlsStream = ssl::stream<tcp::socket>;

// How long accepting pauses after a failed accept.
constexpr std::chrono::milliseconds kAcceptRetry{100};

std::string_view path_of(boost::beast::string_view target) {
  const std::string_view text(target.data(), target.size());
  return text.substr(0, text.find('?'));
}

// The whole answer to one request; the connection closes after it.
std::string answer(const RequestReader::Request* request) {
  unsigned status = 503;
  nlohmann::json body{{"error", "claiming a node id: IDs are served once the claim succeeds"}};
  if (request == nullptr) {
    status = 400;
    body = nlohmann::json{{"error", "bad request"}};
  } else if (request->method() != boost::beast::http::verb::get &&
             request->method() != boost::beast::http::verb::head) {
    // Only probes are answered; anything else waits for the listener proper.
  } else if (path_of(request->target()) == "/healthz") {
    status = 200;
    body = nlohmann::json{{"status", "ok"}, {"claim", "in progress"}};
  } else if (path_of(request->target()) == "/readyz") {
    body = nlohmann::json{{"status", "not ready"}, {"error", "claiming a node id"}};
  }
  const std::string text = body.dump() + "\n";
  const bool head = request != nullptr && request->method() == boost::beast::http::verb::head;
  return fmt::format(
      "HTTP/1.1 {} {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n"
      "Cache-Control: no-store\r\n{}Connection: close\r\n\r\n{}",
      status,
      status == 200   ? "OK"
      : status == 400 ? "Bad Request"
                      : "Service Unavailable",
      text.size(), status == 503 ? "Retry-After: 1\r\n" : "", head ? "" : text);
}

// One connection over Stream (a TCP socket, or TLS over one): the TLS
// handshake if any, one request (bounded in bytes by the reader), the answer,
// close. The read timeout bounds all of it: when it fires the socket closes,
// which ends a handshake or read still under way.
template <typename Stream>
class Exchange : public std::enable_shared_from_this<Exchange<Stream>> {
 public:
  Exchange(Stream stream, const HttpOptions& http, std::atomic<int>& open)
      : stream_(std::move(stream)),
        timer_(stream_.get_executor()),
        in_(max_buffered_request_bytes(http)),
        reader_(http),
        open_(open) {}

  ~Exchange() { --open_; }

  void start(std::chrono::milliseconds read_timeout) {
    timer_.expires_after(read_timeout);
    timer_.async_wait([self = this->shared_from_this()](boost::system::error_code ec) {
      if (!ec) self->close();
    });
    if constexpr (std::is_same_v<Stream, tcp::socket>) {
      read();
    } else {
      stream_.async_handshake(ssl::stream_base::server,
                              [self = this->shared_from_this()](boost::system::error_code ec) {
                                if (ec) return self->close();
                                self->read();
                              });
    }
  }

 private:
  void read() {
    auto space = in_.prepare(std::min(kReadChunkBytes, in_.max_size() - in_.size()));
    stream_.async_read_some(
        space, [self = this->shared_from_this()](boost::system::error_code ec, std::size_t n) {
          if (ec) return self->close();
          self->in_.commit(n);
          switch (self->reader_.read(self->in_)) {
            case RequestReader::Outcome::kNeedMore:
              if (self->in_.size() >= self->in_.max_size()) return self->respond(nullptr);
              return self->read();
            case RequestReader::Outcome::kRequest:
              return self->respond(&self->reader_.request());
            case RequestReader::Outcome::kRefused:
              return self->respond(nullptr);
          }
        });
  }

  void respond(const RequestReader::Request* request) {
    reply_ = answer(request);
    asio::async_write(stream_, asio::buffer(reply_),
                      [self = this->shared_from_this()](boost::system::error_code, std::size_t) {
                        self->close();
                      });
  }

  void close() {
    boost::system::error_code ignored;
    timer_.cancel();
    tcp::socket& socket = boost::beast::get_lowest_layer(stream_);
    socket.shutdown(tcp::socket::shutdown_both, ignored);
    socket.close(ignored);
  }

  Stream stream_;
  asio::steady_timer timer_;
  boost::beast::flat_buffer in_;
  RequestReader reader_;
  std::string reply_;
  std::atomic<int>& open_;
};

class ClaimResponderImpl final : public ClaimResponder {
 public:
  // `tls`: the HTTP address's TLS context, or null for plain HTTP.
  ClaimResponderImpl(const NetOptions& net, const HttpOptions& http,
                     std::unique_ptr<ssl::context> tls, int max_connections)
      : net_(net),
        http_(http),
        tls_(std::move(tls)),
        max_connections_(max_connections),
        acceptor_(io_) {}

  // The address is closed when this returns. Answers still under way are
  // dropped with their connections when io_ ends.
  ~ClaimResponderImpl() override {
    asio::post(io_, [this] {
      boost::system::error_code ignored;
      acceptor_.close(ignored);
      io_.stop();
    });
    if (thread_.joinable()) thread_.join();
  }

  Status listen() {
    boost::system::error_code ec;
    const auto address = asio::ip::make_address(http_.endpoint.host, ec);
    const tcp::endpoint endpoint(address, http_.endpoint.port);
    if (!ec) acceptor_.open(endpoint.protocol(), ec);
    if (!ec) acceptor_.set_option(asio::socket_base::reuse_address(true), ec);
    if (!ec) acceptor_.bind(endpoint, ec);
    if (!ec) acceptor_.listen(asio::socket_base::max_listen_connections, ec);
    if (ec) {
      return invalid_argument(
          fmt::format("http: cannot listen on {}: {}", http_.endpoint.text(), ec.message()));
    }
    accept();
    thread_ = std::thread([this] { io_.run(); });
    return {};
  }

 private:
  // A failed accept (most likely out of descriptors) leaves the connection
  // queued, so accepting again at once fails again at once, a loop that
  // would keep a core busy for as long as it waits: after a failure, accept
  // again kAcceptRetry later, as the HTTP listener does.
  void accept() {
    acceptor_.async_accept([this](boost::system::error_code ec, tcp::socket socket) {
      if (!acceptor_.is_open()) return;
      if (ec) {
        retry_.expires_after(kAcceptRetry);
        retry_.async_wait([this](boost::system::error_code wait) {
          if (!wait && acceptor_.is_open()) accept();
        });
        return;
      }
      if (open_.load() >= max_connections_) {
        boost::system::error_code ignored;
        socket.close(ignored);
      } else {
        ++open_;
        const auto read_timeout = std::min(net_.read_timeout, kReadTimeout);
        if (tls_) {
          std::make_shared<Exchange<TlsStream>>(TlsStream(std::move(socket), *tls_), http_,
                                                open_)
              ->start(read_timeout);
        } else {
          std::make_shared<Exchange<tcp::socket>>(std::move(socket), http_, open_)
              ->start(read_timeout);
        }
      }
      accept();
    });
  }

  const NetOptions& net_;
  const HttpOptions& http_;
  const std::unique_ptr<ssl::context> tls_;  // outlives io_ and so every TLS stream
  const int max_connections_;
  std::atomic<int> open_{0};  // before io_: the connections io_ drops count down
  asio::io_context io_{1};
  tcp::acceptor acceptor_;
  asio::steady_timer retry_{io_};
  std::thread thread_;
};

}  // namespace

Result<std::unique_ptr<ClaimResponder>> ClaimResponder::start(
    const ServiceConfig& config, const HttpOptions& http, const DescriptorBudget& descriptors) {
  if (config.coordinator.kind == "static") return std::unique_ptr<ClaimResponder>();
  if (http.endpoint.port == 0) return std::unique_ptr<ClaimResponder>();
  std::unique_ptr<ssl::context> tls;
  if (!config.net.tls_cert.empty()) {
    auto loaded = load_tls(config.net);
    if (!loaded.ok()) return loaded.error();
    tls = std::move(*loaded);
  }
  const bool https = tls != nullptr;
  const auto max_connections = static_cast<int>(
      std::clamp<std::int64_t>(descriptors.connections_for("http"), 1, kMaxConnections));
  auto responder = std::make_unique<ClaimResponderImpl>(config.net, http, std::move(tls),
                                                        max_connections);
  if (Status listening = responder->listen(); !listening.ok()) return listening.error();
  spdlog::info("{} {}: answering /healthz (200) and /readyz (503) while the node id is claimed",
               https ? "https" : "http", http.endpoint.text());
  return std::unique_ptr<ClaimResponder>(std::move(responder));
}

}  // namespace snowid::server
