// One HTTP/1.1 GET whose whole exchange (connect, TLS handshake, request,
// answer) ends within a timeout, for the few places that ask another
// process over HTTP from a thread that must not hang: the coordinator's
// reading of etcd's clock, the start's check of static peers.
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
#include <boost/asio/ssl/stream_base.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <chrono>
#include <cstddef>
#include <type_traits>

#include "snowid/error.h"

namespace snowid {

// GET `request` on `stream` (a beast::tcp_stream, or a beast::ssl_stream
// over one, its server name and verification set) after connecting it to
// one of `addresses`; the answer, its body at most `body_limit` bytes, or
// kUnavailable saying why not ("no answer within N ms" once `timeout` has
// passed). Runs `io` (which `stream` uses) until the exchange is over.
template <typename Stream>
Result<boost::beast::http::response<boost::beast::http::string_body>> bounded_http_get(
    boost::asio::io_context& io, Stream& stream,
    const boost::asio::ip::tcp::resolver::results_type& addresses,
    const boost::beast::http::request<boost::beast::http::empty_body>& request,
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
