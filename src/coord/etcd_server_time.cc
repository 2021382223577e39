#include "etcd_server_time.h"

#include <fmt/format.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <ctime>
#include <memory>
#include <string>

#include "bounded_http_request.h"

namespace snowid::coord {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace ssl = asio::ssl;

constexpr std::size_t kImfFixdateLength = 29;  // "Sun, 06 Nov 1994 08:49:37 GMT"
constexpr std::size_t kMaxBody = 64 * 1024;    // /version answers a few dozen bytes

struct HostPort {
  std::string host;  // without the brackets of an IPv6 address
  std::string port;
};

HostPort split_endpoint(std::string_view endpoint) {
  const std::size_t colon = endpoint.rfind(':');  // checked by parse_etcd_endpoints
  std::string host(endpoint.substr(0, colon));
  if (host.size() > 2 && host.front() == '[') host = host.substr(1, host.size() - 2);
  return {host, std::string(endpoint.substr(colon + 1))};
}

// The Date of an answer to GET /version.
Result<std::chrono::sys_seconds> date_of(const http::response<http::string_body>& response) {
  const auto date = response.find(http::field::date);
  if (date == response.end()) return Error{ErrorCode::kUnavailable, "no Date header"};
  const std::string_view text(date->value().data(), date->value().size());
  auto parsed = parse_http_date(text);
  if (!parsed) {
    return Error{ErrorCode::kUnavailable, fmt::format("unreadable Date header '{}'", text)};
  }
  return *parsed;
}

// GET /version on `stream`, within `timeout` (bounded_http_request.h: a member
// or a proxy that accepts and never answers does not hold the coordinator's
// thread, which renews the lease and fences the node); its Date.
template <typename Stream>
Result<std::chrono::sys_seconds> ask_date(asio::io_context& io, Stream& stream,
                                          const asio::ip::tcp::resolver::results_type& addresses,
                                          const std::string& host,
                                          std::chrono::milliseconds timeout) {
  http::request<http::empty_body> request{http::verb::get, "/version", 11};
  request.set(http::field::host, host);
  auto response = bounded_http_request(io, stream, addresses, request, timeout, kMaxBody);
  if (!response.ok()) return response.error();
  return date_of(*response);
}

// The client side of TLS as EtcdClient sets it up: the CA verifies the
// member, the certificate and key (if any) identify us.
Result<std::unique_ptr<ssl::context>> tls_context(const EtcdOptions& options) {
  auto context = std::make_unique<ssl::context>(ssl::context::tls_client);
  boost::system::error_code error;
  context->load_verify_file(options.tls_ca_file, error);
  if (error) return invalid_argument("TLS CA " + options.tls_ca_file + ": " + error.message());
  if (!options.tls_cert_file.empty()) {
    context->use_certificate_chain_file(options.tls_cert_file, error);
    if (error) {
      return invalid_argument("TLS certificate " + options.tls_cert_file + ": " + error.message());
    }
    context->use_private_key_file(options.tls_key_file, ssl::context::pem, error);
    if (error) return invalid_argument("TLS key " + options.tls_key_file + ": " + error.message());
  }
  context->set_verify_mode(ssl::verify_peer);
  return context;
}

// The Date of the member at `endpoint` ("host:port"); over TLS if `tls`.
Result<std::chrono::sys_seconds> member_time(std::string_view endpoint,
                                             std::chrono::milliseconds timeout, ssl::context* tls) {
  const HostPort where = split_endpoint(endpoint);
  try {
    asio::io_context io;
    asio::ip::tcp::resolver resolver(io);
    const auto addresses = resolver.resolve(where.host, where.port);
    if (tls == nullptr) {
      beast::tcp_stream stream(io);
      return ask_date(io, stream, addresses, where.host, timeout);
    }
    beast::ssl_stream<beast::tcp_stream> stream(io, *tls);
    if (Status named = verify_tls_server(stream, where.host); !named.ok()) return named.error();
    return ask_date(io, stream, addresses, where.host, timeout);
  } catch (const std::exception& failure) {
    return Error{ErrorCode::kUnavailable, failure.what()};
  }
}

}  // namespace

std::optional<std::chrono::sys_seconds> parse_http_date(std::string_view text) {
  if (text.size() != kImfFixdateLength) return std::nullopt;
  const std::string copy(text);  // strptime needs a terminated string
  std::tm parts{};
  const char* end = strptime(copy.c_str(), "%a, %d %b %Y %H:%M:%S GMT", &parts);
  if (end == nullptr || *end != '\0') return std::nullopt;
  const std::time_t seconds = timegm(&parts);
  if (seconds == static_cast<std::time_t>(-1)) return std::nullopt;
  return std::chrono::sys_seconds{std::chrono::seconds{seconds}};
}

Result<std::chrono::sys_seconds> etcd_server_time(const EtcdOptions& options) {
  std::unique_ptr<ssl::context> tls;
  if (!options.tls_ca_file.empty()) {
    auto made = tls_context(options);
    if (!made.ok()) return made.error();
    tls = std::move(*made);
  }
  std::string failures;
  for (const auto& configured : options.endpoints) {
    auto endpoints = parse_etcd_endpoints(configured);
    if (!endpoints.ok()) return endpoints.error();
    const std::string& endpoint = endpoints->front();
    auto time = member_time(endpoint, options.request_timeout, tls.get());
    if (time.ok()) return time;
    failures += fmt::format("; {}: {}", endpoint, time.error().message);
  }
  return Error{ErrorCode::kUnavailable,
               fmt::format("no etcd member told its time (GET /version){}", failures)};
}

}  // namespace snowid::coord
