#include "http_request_parser.h"

#include <fmt/format.h>

#include <algorithm>
#include <boost/asio/buffer.hpp>
#include <boost/beast/core/string.hpp>
#include <boost/beast/http/error.hpp>
#include <cstdint>
#include <iterator>
#include <string_view>
#include <utility>

namespace snowid::server {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;

// True if a header line in `buffered`, which begins at a line of a request's
// header (its request line, a field line, or the empty line that ends it),
// is continued on the next: CRLF followed by a space or a tab, RFC 9112's
// obs-fold. Beast's parser accepts it, joining the lines; a proxy in front
// may instead read the continuation as a field of its own (say
// "Transfer-Encoding: chunked") and frame the stream differently, so snowidd
// takes the other choice RFC 9112 section 5.2 allows and refuses it.
bool has_obs_fold(std::string_view buffered) {
  std::size_t line = 0;
  for (;;) {
    const std::size_t end = buffered.find("\r\n", line);
    // An incomplete line, or the empty one: no fold in what is buffered.
    if (end == std::string_view::npos || end == line) return false;
    line = end + 2;
    if (line < buffered.size() && (buffered[line] == ' ' || buffered[line] == '\t')) return true;
  }
}

// What RFC 9112 requires of a request's header, beyond what Beast's parser
// checks, once the header is complete: status 0 if the request may be
// served, else the status to refuse it with (and close) and the message.
// Beast refuses differing Content-Length values and Content-Length together
// with chunked, but takes a Transfer-Encoding whose last coding is not
// chunked for no body at all, so the "body" would be read as the next
// request; it also takes any number of Host fields.
struct HeaderRefusal {
  unsigned status = 0;
  std::string_view reason;
};

HeaderRefusal header_refusal(const RequestReader::Request& request) {
  // Section 3.2: an HTTP/1.1 request has one Host line, an HTTP/1.0 one at most.
  const std::size_t hosts = request.count(http::field::host);
  if (hosts > 1) return {400, "malformed request: more than one Host field"};
  if (hosts == 0 && request.version() >= 11) {
    return {400, "malformed request: an HTTP/1.1 request needs a Host field"};
  }
  const auto [first, last] = request.equal_range(http::field::transfer_encoding);
  if (first == last) return {};
  if (request.count(http::field::content_length) > 0) {
    // Section 6.1: may be refused, and the connection must be closed anyway.
    return {400, "malformed request: both Transfer-Encoding and Content-Length"};
  }
  if (request.version() < 11) {
    // Section 6.1: an HTTP/1.0 message with Transfer-Encoding has faulty framing.
    return {400, "malformed request: Transfer-Encoding in an HTTP/1.0 request"};
  }
  // The codings of every Transfer-Encoding line, in order (one comma-separated
  // list, RFC 9110 section 5.3). Chunked must be the last, and only once
  // (section 6.3: else the body's length cannot be known); any other coding
  // is one snowidd does not implement (section 6.1: 501).
  int chunked = 0;
  bool other = false;
  bool chunked_last = false;
  for (auto field = first; field != last; ++field) {
    std::string_view list = std_view(field->value());
    while (!list.empty()) {
      const std::size_t comma = std::min(list.find(','), list.size());
      std::string_view coding = list.substr(0, comma);
      list.remove_prefix(std::min(comma + 1, list.size()));
      while (!coding.empty() && (coding.front() == ' ' || coding.front() == '\t')) {
        coding.remove_prefix(1);
      }
      while (!coding.empty() && (coding.back() == ' ' || coding.back() == '\t')) {
        coding.remove_suffix(1);
      }
      if (coding.empty()) continue;
      chunked_last = beast::iequals(beast::string_view(coding.data(), coding.size()), "chunked");
      chunked += chunked_last ? 1 : 0;
      other = other || !chunked_last;
    }
  }
  if (!chunked_last || chunked != 1) {
    return {400, "malformed request: Transfer-Encoding must end with chunked, once"};
  }
  if (other) return {501, "only the chunked transfer coding is implemented"};
  return {};
}

std::size_t field_count(const RequestReader::Request& request) {
  return static_cast<std::size_t>(std::distance(request.begin(), request.end()));
}

}  // namespace

std::size_t max_buffered_request_bytes(const HttpOptions& options) {
  return static_cast<std::size_t>(options.max_header_bytes) + options.max_body_bytes +
         2 * kReadChunkBytes;
}

RequestReader::RequestReader(const HttpOptions& options)
    : max_header_bytes_(options.max_header_bytes),
      max_body_bytes_(options.max_body_bytes) {}

void RequestReader::start() {
  parser_.emplace();
  // Not eager until the header is checked: put() then stops at the header's
  // end, so header_refusal() sees the header alone, before the parser goes
  // on into a chunked body and merges its trailer fields into the same
  // fields (where a trailer's Host would read as a second Host).
  parser_->eager(false);
  parser_->header_limit(static_cast<std::uint32_t>(max_header_bytes_));
  parser_->body_limit(max_body_bytes_);
  finished_ = false;
  header_checked_ = false;
  header_bytes_ = 0;
  skipped_empty_line_ = false;
}

RequestReader::Outcome RequestReader::refuse(unsigned status, std::string message) {
  refusal_ = Refusal{status, std::move(message)};
  finished_ = true;
  return Outcome::kRefused;
}

RequestReader::Outcome RequestReader::read(beast::flat_buffer& in) {
  while (in.size() > 0) {
    if (!parser_ || finished_) start();
    // RFC 9112 2.2: one empty line (CRLF) before a request line is ignored,
    // as a client may send one after a previous request's body. It counts
    // against the header's size like any other byte.
    if (header_bytes_ == 0 && !parser_->is_header_done()) {
      const auto* bytes = static_cast<const char*>(in.data().data());
      if (bytes[0] == '\r' && in.size() < 2) return Outcome::kNeedMore;
      if (bytes[0] == '\r' && bytes[1] == '\n' && !skipped_empty_line_) {
        skipped_empty_line_ = true;
        in.consume(2);
        continue;
      }
    }
    // Every byte of a header is checked here before the parser takes it
    // (it takes a field line only once it has seen the byte after it).
    if (!parser_->is_header_done() &&
        has_obs_fold({static_cast<const char*>(in.data().data()), in.size()})) {
      return refuse(400, "malformed request: obsolete line folding");
    }
    // Beast applies its header limit only to the part of a header it has
    // not parsed yet, and parses the request line and each complete field
    // line as they arrive; so the whole header is capped here, by letting
    // the parser see no more than what is left of max_header_bytes.
    auto input = in.data();
    const bool in_header = !parser_->is_header_done();
    if (in_header) input = asio::buffer(input, max_header_bytes_ - header_bytes_);
    beast::error_code ec;
    const std::size_t used = parser_->put(input, ec);
    in.consume(used);
    if (in_header) header_bytes_ += used;
    if (ec == http::error::need_more && used == 0 && in_header &&
        header_bytes_ + in.size() >= max_header_bytes_) {
      ec = http::error::header_limit;
    }
    if ((!ec || ec == http::error::need_more) && !header_checked_ && parser_->is_header_done()) {
      header_checked_ = true;
      if (const HeaderRefusal refusal = header_refusal(parser_->get()); refusal.status != 0) {
        return refuse(refusal.status, std::string(refusal.reason));
      }
      // Only a chunked body has a trailer section: other requests (every
      // plain GET) skip the count.
      if (parser_->chunked()) header_fields_ = field_count(parser_->get());
      parser_->eager(true);
    }
    if (ec == http::error::need_more) {
      if (used > 0) continue;
      return Outcome::kNeedMore;
    }
    if (ec == http::error::header_limit) return refuse(431, "request header too large");
    if (ec == http::error::body_limit) return refuse(413, "request body too large");
    if (ec) return refuse(400, fmt::format("malformed request: {}", ec.message()));
    if (parser_->is_done()) {
      // Fields beyond the header's came from a chunked body's trailer
      // section. Beast merges them into the header, where they would pass
      // for header fields (RFC 9110 section 6.5.1 forbids that merge), so a
      // request with trailer fields is refused.
      if (parser_->chunked() && field_count(parser_->get()) != header_fields_) {
        return refuse(400, "malformed request: trailer fields are not accepted");
      }
      finished_ = true;
      return Outcome::kRequest;
    }
  }
  return Outcome::kNeedMore;
}

HttpRequest request_view(const RequestReader::Request& request) {
  return HttpRequest{std_view(request.method_string()), std_view(request.target()),
                     std_view(request[http::field::accept]),
                     std_view(request[http::field::authorization]),
                     std_view(request["X-Snowid-Agent"]), std::string_view(request.body())};
}

}  // namespace snowid::server
