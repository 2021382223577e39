#include "node_http.h"

#include <fmt/format.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <cctype>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <sstream>

#include "bounded_http_request.h"

namespace snowid::cli {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace ssl = asio::ssl;

// A node's answer is a JSON document of a few kilobytes; a list of 1000
// tags is the largest.
constexpr std::size_t kMaxAnswerBytes = 8 << 20;

struct NodeUrl {
  bool tls = false;
  std::string host;  // without IPv6's brackets
  std::string port;
  std::string prefix;  // "" or "/path" without a trailing '/'
};

Result<NodeUrl> parse_url(std::string_view url) {
  NodeUrl out;
  const auto refuse = [&] {
    return invalid_argument(fmt::format(
        "--node '{}' is not http://HOST:PORT or https://HOST:PORT", url.substr(0, 200)));
  };
  if (url.starts_with("https://")) {
    out.tls = true;
    url.remove_prefix(8);
  } else if (url.starts_with("http://")) {
    url.remove_prefix(7);
  } else {
    return refuse();
  }
  const std::size_t slash = url.find('/');
  std::string_view authority = url.substr(0, slash);
  if (slash != std::string_view::npos) out.prefix = url.substr(slash);
  while (!out.prefix.empty() && out.prefix.back() == '/') out.prefix.pop_back();
  std::string_view port = out.tls ? "443" : "80";
  if (authority.starts_with('[')) {
    const std::size_t close = authority.find(']');
    if (close == std::string_view::npos) return refuse();
    out.host = authority.substr(1, close - 1);
    authority.remove_prefix(close + 1);
    if (!authority.empty()) {
      if (authority.front() != ':') return refuse();
      port = authority.substr(1);
    }
  } else {
    const std::size_t colon = authority.rfind(':');
    out.host = authority.substr(0, colon);
    if (colon != std::string_view::npos) port = authority.substr(colon + 1);
  }
  if (out.host.empty() || port.empty() ||
      port.find_first_not_of("0123456789") != std::string_view::npos || port.size() > 5 ||
      out.prefix.find_first_of("?# ") != std::string::npos) {
    return refuse();
  }
  out.port = port;
  return out;
}

// The token of --token-file (its first line, surrounding blanks removed), or
// SNOWID_TOKEN; "" if neither is given.
Result<std::string> read_token(const NodeOptions& options) {
  if (options.token_file.empty()) {
    const char* from_environment = std::getenv("SNOWID_TOKEN");
    return std::string(from_environment == nullptr ? "" : from_environment);
  }
  std::ifstream file(options.token_file);
  std::string token;
  if (!file || !std::getline(file, token)) {
    return invalid_argument(fmt::format("--token-file {}: cannot read it", options.token_file));
  }
  const auto first = token.find_first_not_of(" \t\r");
  const auto last = token.find_last_not_of(" \t\r");
  token = first == std::string::npos ? "" : token.substr(first, last - first + 1);
  if (token.empty()) {
    return invalid_argument(fmt::format("--token-file {}: its first line is empty",
                                        options.token_file));
  }
  return token;
}

// The node's refusal, on one line: its {"error": ...} or the status.
Error refusal(unsigned status, const std::string& body) {
  const auto parsed = nlohmann::json::parse(body, nullptr, false);
  std::string message = fmt::format("the node answered {}", status);
  if (parsed.is_object() && parsed.contains("error") && parsed["error"].is_string()) {
    message = parsed["error"].get<std::string>();
  }
  for (char& c : message) {
    if (static_cast<unsigned char>(c) < 0x20) c = ' ';
  }
  return Error{ErrorCode::kUnavailable, message};
}

template <typename Stream>
Result<NodeReply> exchange(asio::io_context& io, Stream& stream,
                           const asio::ip::tcp::resolver::results_type& addresses,
                           const http::request<http::string_body>& request,
                           std::chrono::milliseconds timeout) {
  auto answered = bounded_http_request(io, stream, addresses, request, timeout, kMaxAnswerBytes);
  if (!answered.ok()) {
    return Error{ErrorCode::kUnavailable,
                 fmt::format("the node does not answer: {}", answered.error().message)};
  }
  const unsigned status = answered->result_int();
  if (status < 200 || status > 299) return refusal(status, answered->body());
  NodeReply reply{status, nlohmann::json::parse(answered->body(), nullptr, false)};
  if (!reply.body.is_object()) {
    return Error{ErrorCode::kUnavailable, "the node's answer is not a JSON object"};
  }
  return reply;
}

}  // namespace

void add_node_options(CLI::App& command, NodeOptions& options) {
  command.add_option("--node", options.url, "The node: http://HOST:PORT or https://HOST:PORT")
      ->capture_default_str();
  command.add_option("--cacert", options.cacert,
                     "PEM file of the CA that verifies an https node (default: the system's)");
  command.add_option("--token-file", options.token_file,
                     "File whose first line is the bearer token (default: $SNOWID_TOKEN)");
  command.add_option("--timeout", options.timeout_seconds, "Seconds to wait for the node")
      ->check(CLI::Range(0.1, 3600.0))
      ->capture_default_str();
}

std::string path_segment(std::string_view text) {
  std::string out;
  for (const char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if (std::isalnum(byte) != 0 || c == '-' || c == '.' || c == '_' || c == '~') {
      out += c;
    } else {
      out += fmt::format("%{:02X}", byte);
    }
  }
  return out;
}

Result<NodeReply> call_node(const NodeOptions& options, std::string_view method,
                            std::string_view target, std::string_view body) {
  auto url = parse_url(options.url);
  if (!url.ok()) return url.error();
  auto token = read_token(options);
  if (!token.ok()) return token.error();
  if (!url->tls && !options.cacert.empty()) {
    return invalid_argument("--cacert goes with an https:// node");
  }
  http::request<http::string_body> request{
      http::string_to_verb(beast::string_view(method.data(), method.size())),
      url->prefix + std::string(target), 11};
  request.set(http::field::host, url->host);
  request.set(http::field::accept, "application/json");
  if (!token->empty()) request.set(http::field::authorization, "Bearer " + *token);
  if (!body.empty()) {
    request.set(http::field::content_type, "application/json");
    request.body() = std::string(body);
  }
  request.prepare_payload();
  const auto timeout = std::chrono::milliseconds(
      static_cast<std::int64_t>(options.timeout_seconds * 1000));
  try {
    asio::io_context io;
    asio::ip::tcp::resolver resolver(io);
    const auto addresses = resolver.resolve(url->host, url->port);
    if (!url->tls) {
      beast::tcp_stream stream(io);
      return exchange(io, stream, addresses, request, timeout);
    }
    ssl::context context(ssl::context::tls_client);
    boost::system::error_code error;
    options.cacert.empty() ? context.set_default_verify_paths(error)
                           : context.load_verify_file(options.cacert, error);
    if (error) {
      return invalid_argument(fmt::format("--cacert {}: {}", options.cacert, error.message()));
    }
    context.set_verify_mode(ssl::verify_peer);
    beast::ssl_stream<beast::tcp_stream> stream(io, context);
    if (Status named = verify_tls_server(stream, url->host); !named.ok()) return named.error();
    return exchange(io, stream, addresses, request, timeout);
  } catch (const std::exception& failure) {
    return Error{ErrorCode::kUnavailable,
                 fmt::format("the node does not answer: {}", failure.what())};
  }
}

}  // namespace snowid::cli
