// One HTTP/1.1 request whose whole exchange (connect, TLS handshake, request,
// answer) ends within a timeout, for the few places that ask another
// process over HTTP from a thread that must not hang: the coordinator's
// reading of etcd's clock, the start's check of static peers, the CLI's
// calls of a node (`snowid tag`, `snowid business`).
//
// beast::tcp_stream's expiry bounds asynchronous operations only; a
// synchronous read from a server (or a proxy) that accepts the connection
// and never answers would block for ever. So the exchange runs as
// asynchronous operations on the caller's own io_context, until they end or
// the expiry cancels them. Header-only (a template over the stream);
// targets that include it link snowid_asio.
#pragma once

#include <fmt/format.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <openssl/ssl.h>

#include <boost/asio/ip/address.hpp>
#include <boost/asio/ssl/host_name_verification.hpp>
#include <boost/asio/ssl/stream_base.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <chrono>
#include <cstddef>
#include <string>
#include <type_traits>

#include "snowid/error.h"

namespace snowid {

// Makes the TLS client `stream` (a beast::ssl_stream) verify that the server's
// certificate names `host`, and send `host` as the server name (SNI) unless
// it is an IP address. kUnavailable if OpenSSL refuses the name.
template <typename Stream>
Status verify_tls_server(Stream& stream, const std::string& host) {
  stream.set_verify_callback(boost::asio::ssl::host_name_verification(host));
  boost::system::error_code not_an_address;
  boost::asio::ip::make_address(host, not_an_address);
  // SSL_set_tlsext_host_name() without its C cast: the name is only read.
  if (not_an_address &&
      SSL_ctrl(stream.native_handle(), SSL_CTRL_SET_TLSEXT_HOSTNAME, TLSEXT_NAMETYPE_host_name,
               const_cast<char*>(host.c_str())) != 1) {
    return Error{ErrorCode::kUnavailable, "cannot set the TLS server name"};
  }
  return {};
}

// Sends `request` (a GET, or any method with its body) on `stream` (a beast::tcp_stream, or a beast::ssl_stream
// over one, its server name and verification set) after connecting it to
// one of `addresses`; the answer, its body at most `body_limit` bytes, or
// kUnavailable saying why not ("no answer within N ms" once `timeout` has
// passed). Runs `io` (which `stream` uses) until the exchange is over.
template <typename Stream, typename RequestBody>
Result<boost::beast::http::response<boost::beast::http::string_body>> bounded_http_request(
    boost::asio::io_context& io, Stream& stream,
    const boost::asio::ip::tcp::resolver::results_type& addresses,
    const boost::beast::http::request<RequestBody>& request,
    std::chrono::milliseconds timeout, std::size_t body_limit) {
  namespace beast = boost::beast;
  namespace http = beast::http;
  using boost::system::error_code;
  constexpr bool kTls = !std::is_same_v<Stream, beast::tcp_stream>;
  beast::flat_buffer buffer;
  http::response_parser<http::string_body> parser;
  parser.body_limit(body_limit);
  error_code failure;
  const auto read = [&] {
    http::async_read(stream, buffer, parser, [&](error_code ec, std::size_t) { failure = ec; });
  };
  const auto write = [&] {
    http::async_write(stream, request, [&](error_code ec, std::size_t) {
      if (ec) {
        failure = ec;
      } else {
        read();
      }
    });
  };
  // One expiry for the whole exchange: every operation started before it
  // passes is cancelled when it does.
  beast::get_lowest_layer(stream).expires_after(timeout);
  beast::get_lowest_layer(stream).async_connect(
      addresses, [&](error_code ec, const boost::asio::ip::tcp::endpoint&) {
        if (ec) {
          failure = ec;
        } else if constexpr (kTls) {
          stream.async_handshake(boost::asio::ssl::stream_base::client, [&](error_code shaken) {
            if (shaken) {
              failure = shaken;
            } else {
              write();
            }
          });
        } else {
          write();
        }
      });
  io.run();
  if (failure) {
    return Error{ErrorCode::kUnavailable,
                 failure == beast::error::timeout
                     ? fmt::format("no answer within {} ms", timeout.count())
                     : failure.message()};
  }
  return parser.release();
}

}  // namespace snowid
