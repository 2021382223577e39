// How snowidd reads HTTP/1.1 requests out of a connection's bytes: Boost.Beast's
// request parser with the configured header and body limits, and on top of it
// the framing rules of RFC 9112 that Beast leaves out (docs/design.md,
// "snowidd"). The transport (http_server.cc) and the fuzz targets both read
// requests through RequestReader, so they parse alike.
#pragma once

#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/string_body.hpp>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include "http_options.h"
#include "http_request.h"

namespace snowid::server {

// Beast's string view as the standard one (same bytes, no copy).
inline std::string_view std_view(boost::beast::string_view s) { return {s.data(), s.size()}; }

// Bytes a connection reads from its socket at a time, at most.
inline constexpr std::size_t kReadChunkBytes = 4096;

// The most a connection's input buffer holds: one request at its header and
// body limits, and room for two reads beyond. A full buffer is answered 431.
std::size_t max_buffered_request_bytes(const HttpOptions& options);

// Reads the requests of one connection, one after the other, from the front
// of its input buffer. Not thread-safe: one connection's thread uses it.
class RequestReader {
 public:
  using Request = boost::beast::http::request<boost::beast::http::string_body>;

  // A request refused: the status to answer (400, 413, 431 or 501) and why.
  // The connection is closed after the answer: its framing is in doubt.
  struct Refusal {
    unsigned status = 0;
    std::string message;
  };

  enum class Outcome {
    kNeedMore,  // no complete request in the buffer: read more
    kRequest,   // request() is a complete request
    kRefused,   // refusal() says how to answer before closing
  };

  explicit RequestReader(const HttpOptions& options);

  // Parses from the front of `in`, consuming what the parser takes, until a
  // request is complete, the bytes are refused, or more are needed. The call
  // after kRequest or kRefused starts on the next request.
  Outcome read(boost::beast::flat_buffer& in);

  // Valid after read() returned kRequest, until the next read().
  const Request& request() const { return parser_->get(); }
  // Valid after read() returned kRefused.
  const Refusal& refusal() const { return refusal_; }

  // True if no byte of a request is parsed but unanswered: between requests.
  bool between_requests() const { return !parser_ || finished_; }

 private:
  void start();
  Outcome refuse(unsigned status, std::string message);

  const std::size_t max_header_bytes_;
  const std::size_t max_body_bytes_;
  std::optional<boost::beast::http::request_parser<boost::beast::http::string_body>> parser_;
  bool finished_ = false;         // parser_ holds a complete (or refused) request
  bool header_checked_ = false;   // header_refusal() has seen parser_'s header
  std::size_t header_bytes_ = 0;  // of parser_'s request, taken by the parser so far
  bool skipped_empty_line_ = false;  // the one empty line before this request line
  std::size_t header_fields_ = 0;  // fields in a chunked request's header, once checked
  Refusal refusal_;
};

// What handle_http() needs of a parsed request; the views point into it.
HttpRequest request_view(const RequestReader::Request& request);

}  // namespace snowid::server
