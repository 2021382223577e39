#include "claim_responder.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <nlohmann/json.hpp>
#include <thread>

#include "http_request_parser.h"

namespace snowid::server {
namespace {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;

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

// One connection: read one request (bounded in bytes by the reader, in time
// by the read timeout), answer, close.
class Exchange : public std::enable_shared_from_this<Exchange> {
 public:
  Exchange(tcp::socket socket, const ServerConfig& config, std::atomic<int>& open)
      : socket_(std::move(socket)),
        timer_(socket_.get_executor()),
        in_(max_buffered_request_bytes(config)),
        reader_(config),
        open_(open) {}

  ~Exchange() { --open_; }

  void start(std::chrono::milliseconds read_timeout) {
    timer_.expires_after(read_timeout);
    timer_.async_wait([self = shared_from_this()](boost::system::error_code ec) {
      if (!ec) self->close();
    });
    read();
  }

 private:
  void read() {
    auto space = in_.prepare(std::min(kReadChunkBytes, in_.max_size() - in_.size()));
    socket_.async_read_some(
        space, [self = shared_from_this()](boost::system::error_code ec, std::size_t n) {
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
    asio::async_write(
        socket_, asio::buffer(reply_),
        [self = shared_from_this()](boost::system::error_code, std::size_t) { self->close(); });
  }

  void close() {
    boost::system::error_code ignored;
    timer_.cancel();
    socket_.shutdown(tcp::socket::shutdown_both, ignored);
    socket_.close(ignored);
  }

  tcp::socket socket_;
  asio::steady_timer timer_;
  boost::beast::flat_buffer in_;
  RequestReader reader_;
  std::string reply_;
  std::atomic<int>& open_;
};

class ClaimResponderImpl final : public ClaimResponder {
 public:
  explicit ClaimResponderImpl(const ServerConfig& config) : config_(config), acceptor_(io_) {}

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

  bool listen() {
    boost::system::error_code ec;
    const auto address = asio::ip::make_address(config_.http.endpoint.host, ec);
    const tcp::endpoint endpoint(address, config_.http.endpoint.port);
    if (!ec) acceptor_.open(endpoint.protocol(), ec);
    if (!ec) acceptor_.set_option(asio::socket_base::reuse_address(true), ec);
    if (!ec) acceptor_.bind(endpoint, ec);
    if (!ec) acceptor_.listen(asio::socket_base::max_listen_connections, ec);
    if (ec) {
      spdlog::warn("http {}: not answering probes during the claim: {}",
                   config_.http.endpoint.text(), ec.message());
      return false;
    }
    accept();
    thread_ = std::thread([this] { io_.run(); });
    return true;
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
      if (open_.load() >= kMaxConnections) {
        boost::system::error_code ignored;
        socket.close(ignored);
      } else {
        ++open_;
        std::make_shared<Exchange>(std::move(socket), config_, open_)
            ->start(std::min(config_.http.read_timeout, kReadTimeout));
      }
      accept();
    });
  }

  const ServerConfig& config_;
  std::atomic<int> open_{0};  // before io_: the connections io_ drops count down
  asio::io_context io_{1};
  tcp::acceptor acceptor_;
  asio::steady_timer retry_{io_};
  std::thread thread_;
};

}  // namespace

std::unique_ptr<ClaimResponder> ClaimResponder::start(const ServerConfig& config) {
  if (config.coordinator.kind == "static") return nullptr;
  if (!config.http.tls_cert.empty()) {
    spdlog::info("http is TLS: nothing answers on {} until the node id is claimed",
                 config.http.endpoint.text());
    return nullptr;
  }
  if (config.http.endpoint.port == 0) return nullptr;
  auto responder = std::make_unique<ClaimResponderImpl>(config);
  if (!responder->listen()) return nullptr;
  spdlog::info("http {}: answering /healthz (200) and /readyz (503) while the node id is claimed",
               config.http.endpoint.text());
  return responder;
}

}  // namespace snowid::server
