// Fuzz target: the bytes a client sends on a connection, read as snowidd's
// connections read them: through RequestReader (http_request_parser.h:
// Boost.Beast's parser with the 8 KiB header and 4 KiB body limits, the
// whole header capped, RFC 9112's framing rules on top) and the input
// buffer's bound, in the loop of Session::parse_and_answer
// (src/server/http/http_server.cc), with every complete request answered by
// handle_http on the open service of fuzz_support.h. Covers request lines,
// headers, pipelining, keep-alive and Connection: close, chunked and sized
// bodies, smuggling attempts, and the refusals (400, 413, 431, 501).
//
// Input: the raw bytes. They are served twice: in reads of up to 4 KiB (a
// fast client) and in reads of 1 + (first byte % 16) bytes (a slow one).
// Checks beyond "no crash, no sanitizer report, no endless loop": both
// servings answer the same requests with the same routes and statuses, and
// the IDs answered keep increasing. Allowed differences: a 503 counts as a
// 200 (issuing may be refused for a moment); a refusal counts the same
// whatever its status (after a partial header Beast waits for the header's
// end before it parses again, so slow reads of a malformed header may meet
// the header limit instead); and a serving that still waits for bytes need
// only have answered a prefix of the other's answers.
#include <algorithm>
#include <boost/beast/core/flat_buffer.hpp>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <utility>
#include <vector>

#include "fuzz_support.h"
#include "http_request_parser.h"
#include "http_routes.h"

namespace {

namespace beast = boost::beast;
using snowid::server::Route;

// A request the reader refused (400, 413, 431 or 501) is answered kRefused.
constexpr unsigned kRefused = 0;

// What a connection answered, in order, and whether it closed itself (else
// it still waits for bytes).
struct Served {
  std::vector<std::pair<Route, unsigned>> answers;
  bool closed = false;
};

bool is_prefix(const Served& shorter, const Served& longer) {
  return shorter.answers.size() <= longer.answers.size() &&
         std::equal(shorter.answers.begin(), shorter.answers.end(), longer.answers.begin());
}

bool consistent(const Served& a, const Served& b) {
  if (a.closed && b.closed) return a.answers == b.answers;
  return (!a.closed && is_prefix(a, b)) || (!b.closed && is_prefix(b, a));
}

void print(const char* name, const Served& served) {
  std::fprintf(stderr, "%s:", name);
  for (const auto& [route, status] : served.answers) {
    const std::string_view route_name = snowid::server::route_name(route);
    std::fprintf(stderr, " %.*s %u,", static_cast<int>(route_name.size()), route_name.data(),
                 status);
  }
  std::fprintf(stderr, " %s\n", served.closed ? "closed" : "waiting for more");
}

Served serve(std::string_view bytes, std::size_t read_size, snowid::fuzz::IncreasingCheck& ids) {
  auto& service = snowid::fuzz::service(snowid::fuzz::ServiceKind::kOpen);
  const snowid::server::HttpOptions config;  // the defaults, as the fuzz services use
  beast::flat_buffer in(snowid::server::max_buffered_request_bytes(config));
  snowid::server::RequestReader reader(config);
  snowid::server::HttpResponse response;
  Served served;
  std::size_t sent = 0;
  while (true) {
    // Session::parse_and_answer: every complete request in the buffer.
    while (!served.closed && in.size() > 0) {
      const auto outcome = reader.read(in);
      if (outcome == snowid::server::RequestReader::Outcome::kNeedMore) break;
      if (outcome == snowid::server::RequestReader::Outcome::kRefused) {
        SNOWID_FUZZ_CHECK(reader.refusal().status >= 400 && !reader.refusal().message.empty());
        served.answers.emplace_back(Route::kOther, kRefused);
        served.closed = true;
        break;
      }
      const auto& request = reader.request();
      snowid::server::handle_http(service, snowid::server::request_view(request), response);
      unsigned status = response.status;
      // A HEAD issues nothing and has no body.
      if (status == 200 && !response.head &&
          (response.route == Route::kId || response.route == Route::kIds ||
           response.route == Route::kLeafSnowflake)) {
        SNOWID_FUZZ_CHECK(snowid::fuzz::check_numbers(response.body, ids) > 0);
      }
      if (status == 503) status = 200;
      served.answers.emplace_back(response.route, status);
      if (!request.keep_alive()) served.closed = true;
    }
    // The client sent everything: a real connection would now time out.
    if (served.closed || sent == bytes.size()) return served;
    // Session::read.
    if (in.size() >= in.max_size()) {
      served.answers.emplace_back(Route::kOther, kRefused);
      served.closed = true;
      return served;
    }
    const std::size_t n = std::min({read_size, in.max_size() - in.size(), bytes.size() - sent});
    std::memcpy(in.prepare(n).data(), bytes.data() + sent, n);
    in.commit(n);
    sent += n;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static snowid::fuzz::IncreasingCheck ids;
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  const Served fast = serve(bytes, snowid::server::kReadChunkBytes, ids);
  const Served slow = serve(bytes, size == 0 ? 1 : 1 + data[0] % 16, ids);
  if (!consistent(fast, slow)) {
    print("fast reads", fast);
    print("slow reads", slow);
  }
  SNOWID_FUZZ_CHECK(consistent(fast, slow));
  return 0;
}
