// How snowidd reads HTTP/1.1 requests: Boost.Beast's request parser with the
// configured header and body limits, the most a connection buffers, and the
// view of a parsed request that handle_http() answers. The transport
// (http_server.cc) and the fuzz targets both use these, so they parse alike.
#pragma once

#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/string_body.hpp>
#include <cstddef>

#include "config.h"
#include "http_routes.h"

namespace snowid::server {

using RequestParser = boost::beast::http::request_parser<boost::beast::http::string_body>;

// Bytes a connection reads from its socket at a time, at most.
inline constexpr std::size_t kReadChunkBytes = 4096;

// Readies a new parser for one request: eager (the body is parsed as it
// arrives), with the header and body limits of `config`.
void configure_request_parser(RequestParser& parser, const ServerConfig& config);

// The most a connection's input buffer holds: one request at its header and
// body limits, and room for two reads beyond. A full buffer is answered 431.
std::size_t max_buffered_request_bytes(const ServerConfig& config);

// What handle_http() needs of a parsed request; the views point into it.
HttpRequest request_view(const RequestParser::value_type& request);

}  // namespace snowid::server
