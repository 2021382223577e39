#include "http_server.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <boost/asio/strand.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <optional>

#include "http_routes.h"

namespace snowid::server {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

namespace {

std::string_view std_view(beast::string_view s) { return {s.data(), s.size()}; }

// One connection. Reads requests one at a time from its buffer (pipelined
// requests wait there in order), answers each, and closes on error, on
// "Connection: close", or when a timeout expires.
class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(tcp::socket socket, IdService& service)
      : stream_(std::move(socket)), service_(service) {
    service_.metrics().connection_opened();
  }
  ~Session() { service_.metrics().connection_closed(); }

  void start() { next_request(); }

 private:
  void next_request() {
    parser_.emplace();
    parser_->header_limit(service_.config().max_header_bytes);
    parser_->body_limit(service_.config().max_body_bytes);
    started_ = buffer_.size() > 0;
    stream_.expires_after(started_ ? service_.config().read_timeout
                                   : service_.config().idle_timeout);
    read_some();
  }

  void read_some() {
    http::async_read_some(stream_, buffer_, *parser_,
                          [self = shared_from_this()](beast::error_code ec, std::size_t) {
                            self->on_read(ec);
                          });
  }

  void on_read(beast::error_code ec) {
    if (ec == http::error::end_of_stream || ec == asio::error::eof ||
        ec == beast::error::timeout || ec == asio::error::connection_reset ||
        ec == asio::error::operation_aborted) {
      return close();
    }
    if (ec == http::error::header_limit) return reject(431, "request header too large");
    if (ec == http::error::body_limit) return reject(413, "request body too large");
    if (ec) return reject(400, fmt::format("malformed request: {}", ec.message()));
    if (!started_ && parser_->got_some()) {
      // The request has begun: from now on the read timeout applies.
      started_ = true;
      stream_.expires_after(service_.config().read_timeout);
    }
    if (!parser_->is_done()) return read_some();
    answer();
  }

  void answer() {
    const auto begin = std::chrono::steady_clock::now();
    const auto& request = parser_->get();
    HttpRequest view{std_view(request.method_string()), std_view(request.target()),
                     std_view(request[http::field::accept]),
                     std_view(request[http::field::authorization]),
                     std_view(request["X-Snowid-Agent"])};
    HttpResponse result = handle_http(service_, view);
    const bool keep_alive = request.keep_alive();
    send(std::move(result), keep_alive, request.version(), begin);
  }

  void reject(unsigned status, std::string_view message) {
    send(error_response(status, message), false, 11, std::chrono::steady_clock::now());
  }

  void send(HttpResponse result, bool keep_alive, unsigned version,
            std::chrono::steady_clock::time_point begin) {
    auto response = std::make_shared<http::response<http::string_body>>(
        static_cast<http::status>(result.status), version);
    response->set(http::field::server, "snowid");
    response->set(http::field::content_type, result.content_type);
    for (const auto& [name, value] : result.headers) response->set(name, value);
    response->body() = std::move(result.body);
    response->keep_alive(keep_alive);
    response->prepare_payload();
    service_.metrics().count_request(result.route, result.status,
                                     std::chrono::steady_clock::now() - begin);
    stream_.expires_after(service_.config().read_timeout);
    http::async_write(stream_, *response,
                      [self = shared_from_this(), response, keep_alive](beast::error_code ec,
                                                                        std::size_t) {
                        if (ec || !keep_alive) return self->close();
                        self->next_request();
                      });
  }

  void close() {
    beast::error_code ignored;
    stream_.socket().shutdown(tcp::socket::shutdown_send, ignored);
    stream_.socket().close(ignored);
  }

  beast::tcp_stream stream_;
  IdService& service_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  bool started_ = false;
};

}  // namespace

struct HttpServer::Impl : std::enable_shared_from_this<HttpServer::Impl> {
  Impl(asio::io_context& io_context, IdService& id_service)
      : io(io_context), service(id_service), acceptor(asio::make_strand(io_context)) {}

  void accept() {
    acceptor.async_accept(asio::make_strand(io), [self = shared_from_this()](
                                                     beast::error_code ec, tcp::socket socket) {
      if (ec == asio::error::operation_aborted || !self->acceptor.is_open()) return;
      if (!ec) self->admit(std::move(socket));
      self->accept();
    });
  }

  void admit(tcp::socket socket) {
    if (service.metrics().open_connections() >= service.config().max_connections) {
      service.metrics().connection_refused();
      // A short answer, then close: the client learns why.
      static const std::string kBody = "{\"error\":\"too many open connections\"}\n";
      auto refused = std::make_shared<std::string>(fmt::format(
          "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n"
          "Connection: close\r\nContent-Length: {}\r\n\r\n{}",
          kBody.size(), kBody));
      auto sock = std::make_shared<tcp::socket>(std::move(socket));
      asio::async_write(*sock, asio::buffer(*refused),
                        [sock, refused](beast::error_code, std::size_t) {
                          beast::error_code ignored;
                          sock->shutdown(tcp::socket::shutdown_both, ignored);
                        });
      return;
    }
    beast::error_code ignored;
    socket.set_option(tcp::no_delay(true), ignored);
    std::make_shared<Session>(std::move(socket), service)->start();
  }

  asio::io_context& io;
  IdService& service;
  tcp::acceptor acceptor;
};

HttpServer::HttpServer(asio::io_context& io, IdService& service)
    : impl_(std::make_shared<Impl>(io, service)) {}

HttpServer::~HttpServer() { stop_accepting(); }

Result<Endpoint> HttpServer::listen() {
  const Endpoint& wanted = impl_->service.config().http;
  beast::error_code ec;
  const auto address = asio::ip::make_address(wanted.host, ec);
  if (ec) {
    return invalid_argument(fmt::format("http: '{}' is not an IP address", wanted.host));
  }
  const tcp::endpoint endpoint(address, wanted.port);
  auto& acceptor = impl_->acceptor;
  acceptor.open(endpoint.protocol(), ec);
  if (!ec) acceptor.set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) acceptor.bind(endpoint, ec);
  if (!ec) acceptor.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) {
    return Error{ErrorCode::kUnavailable,
                 fmt::format("http: cannot listen on {}: {}", wanted.text(), ec.message())};
  }
  impl_->accept();
  return Endpoint{wanted.host, acceptor.local_endpoint().port()};
}

void HttpServer::stop_accepting() {
  asio::post(impl_->acceptor.get_executor(), [impl = impl_] {
    beast::error_code ec;
    impl->acceptor.close(ec);
  });
}

}  // namespace snowid::server
