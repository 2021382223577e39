// Hostile bytes on raw sockets against the real snowidd: request smuggling,
// ambiguous framing, bad line endings, invalid chunks, garbage after a
// pipelined request, invalid and oversized requests, half-closed
// connections.
//
// The rule every case checks (RFC 9112): a request whose framing is in doubt
// gets one error answer and the connection is closed, so that bytes the
// attacker meant as a second, hidden request are never answered as one
// ("no desynchronisation"). Each hidden request below is
// "GET /v1/ids?count=3": had it been answered, an extra 200 would show.
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "abuse_server.h"

namespace snowid {
namespace {

using test::AbuseTest;
using test::RawConnection;
using test::send_and_collect;

const std::string kRequest = "GET /v1/id HTTP/1.1\r\nHost: x\r\n\r\n";
const std::string kHidden = "GET /v1/ids?count=3 HTTP/1.1\r\nHost: hidden\r\n\r\n";

struct Attack {
  const char* name;  // what the attacker does
  std::string bytes;
  std::vector<int> statuses;  // the responses, in order
  bool closes = true;         // the server then closes the connection
  const char* says = "";      // in the last response's body
};

std::string post_chunked(const std::string& chunks) {
  return "POST /v1/id HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n" + chunks;
}

std::string get_with(const std::string& fields) {
  return "GET /v1/id HTTP/1.1\r\nHost: x\r\n" + fields + "\r\n";
}

void expect_outcomes(int port, const std::vector<Attack>& attacks) {
  for (const Attack& attack : attacks) {
    SCOPED_TRACE(attack.name);
    RawConnection connection(port);
    ASSERT_TRUE(connection.send(attack.bytes));
    // The expected answers, then whatever else comes: until the server
    // closes, or for a moment if it should not.
    auto outcome = connection.read_replies(attack.statuses.size());
    if (!outcome.closed) {
      auto more = connection.read_until_closed(attack.closes ? std::chrono::milliseconds{5000}
                                                             : std::chrono::milliseconds{300});
      outcome.replies.insert(outcome.replies.end(), more.replies.begin(), more.replies.end());
      outcome.closed = more.closed;
      outcome.leftover = more.leftover;
    }
    std::vector<int> statuses;
    for (const auto& reply : outcome.replies) statuses.push_back(reply.status);
    EXPECT_EQ(statuses, attack.statuses) << outcome.leftover;
    EXPECT_EQ(outcome.closed, attack.closes);
    EXPECT_EQ(outcome.leftover, "");
    for (const auto& reply : outcome.replies) {
      EXPECT_EQ(reply.body.find("\"ids\""), std::string::npos) << "the hidden request was answered";
    }
    if (!outcome.replies.empty()) {
      EXPECT_NE(outcome.replies.back().body.find(attack.says), std::string::npos)
          << outcome.replies.back().body;
    }
  }
}

class HttpFramingTest : public AbuseTest {};

// Two framings in one request: a front proxy using one and snowidd the
// other would disagree on where the next request starts.
TEST_F(HttpFramingTest, RequestSmugglingIsRefusedAndTheConnectionClosed) {
  start();
  const std::string zero_chunk_then_hidden = "0\r\n\r\n" + kHidden;
  const std::string length = std::to_string(zero_chunk_then_hidden.size());
  expect_outcomes(
      port(),
      {
          // CL.TE and TE.CL: refused by Beast's parser.
          {"Content-Length, then Transfer-Encoding: chunked",
           "POST /v1/id HTTP/1.1\r\nHost: x\r\nContent-Length: " + length +
               "\r\nTransfer-Encoding: chunked\r\n\r\n" + zero_chunk_then_hidden,
           {400}},
          {"Transfer-Encoding: chunked, then Content-Length",
           "POST /v1/id HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nContent-Length: " +
               length + "\r\n\r\n" + zero_chunk_then_hidden,
           {400}},
          // Beast ignored a Transfer-Encoding other than chunked and framed
          // by Content-Length (200); RFC 9112 6.1 lets a server refuse both.
          {"Transfer-Encoding: gzip with Content-Length",
           "GET /v1/id HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip\r\nContent-Length: " +
               std::to_string(kHidden.size()) + "\r\n\r\n" + kHidden,
           {400},
           true,
           "both Transfer-Encoding and Content-Length"},
          // Beast read these as requests without a body, so the "body" was
          // answered as a request of its own: 200, 200 (desynchronised).
          {"Transfer-Encoding: gzip alone",
           get_with("Transfer-Encoding: gzip\r\n") + kHidden,
           {400},
           true,
           "must end with chunked"},
          {"chunked not the last coding",
           get_with("Transfer-Encoding: chunked, identity\r\n") + kHidden,
           {400},
           true,
           "must end with chunked"},
          {"chunked twice in one line",
           get_with("Transfer-Encoding: chunked, chunked\r\n") + zero_chunk_then_hidden,
           {400},
           true,
           "must end with chunked"},
          {"an obfuscated chunked",
           get_with("Transfer-Encoding: xchunked\r\n") + kHidden,
           {400},
           true,
           "must end with chunked"},
          {"an empty Transfer-Encoding",
           get_with("Transfer-Encoding: \r\n") + kHidden,
           {400},
           true,
           "must end with chunked"},
          // Framed correctly, but with a coding snowidd cannot undo
          // (RFC 9112 6.1: 501); Beast had answered it and the next request.
          {"gzip then chunked on two lines",
           get_with("Transfer-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n") +
               zero_chunk_then_hidden,
           {501},
           true,
           "only the chunked transfer coding"},
          {"Transfer-Encoding twice",
           get_with("Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n") +
               zero_chunk_then_hidden,
           {400}},
          {"whitespace before the colon",
           get_with("Transfer-Encoding : chunked\r\n") + zero_chunk_then_hidden,
           {400}},
          // RFC 9112 6.1: Transfer-Encoding in HTTP/1.0 means faulty framing.
          // Beast had used it (and closed, as HTTP/1.0 does).
          {"chunked in HTTP/1.0",
           "GET /v1/id HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n" + zero_chunk_then_hidden,
           {400},
           true,
           "HTTP/1.0"},
          // RFC 9112 6.3: differing lengths are an unrecoverable error.
          {"two differing Content-Length lines",
           get_with("Content-Length: 0\r\nContent-Length: " + std::to_string(kHidden.size()) +
                    "\r\n") +
               kHidden,
           {400}},
          {"a Content-Length list that differs",
           get_with("Content-Length: 0, 5\r\n") + kHidden,
           {400}},
          {"a signed Content-Length", get_with("Content-Length: +5\r\n") + kHidden, {400}},
          {"a Content-Length beyond 2^64",
           get_with("Content-Length: 99999999999999999999999\r\n") + kHidden,
           {400}},
      });
  // Framing that is sound is kept: the body is skipped, not answered.
  expect_outcomes(port(),
                  {
                      {"a GET whose body is a request",
                       get_with("Content-Length: " + std::to_string(kHidden.size()) + "\r\n") +
                           kHidden + kRequest,
                       {200, 200},
                       false},
                      {"identical Content-Length lines (RFC 9112 6.3 allows them)",
                       get_with("Content-Length: 5\r\nContent-Length: 5\r\n") + "hello" + kRequest,
                       {200, 200},
                       false},
                      {"a chunked POST, then a GET",
                       post_chunked("5\r\nhello\r\n0\r\n\r\n") + kRequest,
                       {405, 200},
                       false},
                  });
}

TEST_F(HttpFramingTest, BareLineFeedsAndObsoleteLineFoldingAreRefused) {
  start();
  expect_outcomes(
      port(),
      {
          // RFC 9112 2.2 lets a server accept a bare LF; Beast refuses it
          // wherever it appears, at once.
          {"LF line endings throughout", "GET /v1/id HTTP/1.1\nHost: x\n\n" + kHidden, {400}},
          {"LF after the request line", "GET /v1/id HTTP/1.1\nHost: x\r\n\r\n" + kHidden, {400}},
          {"LF inside the fields",
           "GET /v1/id HTTP/1.1\r\nHost: x\nX-A: b\r\n\r\n" + kHidden,
           {400}},
          {"LF as the empty last line", "GET /v1/id HTTP/1.1\r\nHost: x\r\n\n" + kHidden, {400}},
          {"a bare CR", "GET /v1/id HTTP/1.1\r\nHost: x\rX-A: b\r\n\r\n" + kHidden, {400}},
          {"whitespace before the first field",
           "GET /v1/id HTTP/1.1\r\n Host: x\r\n\r\n" + kHidden,
           {400}},
          // RFC 9112 5.2: refuse obs-fold or replace it with spaces. Beast
          // replaced it (200); a proxy may read the continuation line as a
          // field of its own, so snowidd refuses it.
          {"obs-fold",
           get_with("X-A: a\r\n b\r\n") + kHidden,
           {400},
           true,
           "obsolete line folding"},
          {"obs-fold with a tab",
           get_with("X-A: a\r\n\tb\r\n") + kHidden,
           {400},
           true,
           "obsolete line folding"},
          {"obs-fold hiding Transfer-Encoding",
           get_with("X-A: a\r\n Transfer-Encoding: chunked\r\n") + "0\r\n\r\n" + kHidden,
           {400},
           true,
           "obsolete line folding"},
          {"a NUL in a field value", get_with(std::string("X-A: a\0b\r\n", 10)) + kHidden, {400}},
      });
}

TEST_F(HttpFramingTest, InvalidChunksAreRefused) {
  start();
  expect_outcomes(
      port(),
      {
          {"a non-hex chunk size", post_chunked("zz\r\n") + kHidden, {400}},
          {"a negative chunk size", post_chunked("-1\r\n") + kHidden, {400}},
          {"a chunk size beyond 2^64", post_chunked("fffffffffffffffff1\r\n") + kHidden, {400}},
          {"a 0x prefix", post_chunked("0x5\r\nhello\r\n0\r\n\r\n") + kHidden, {400}},
          {"whitespace after the size", post_chunked("5 \r\nhello\r\n0\r\n\r\n") + kHidden, {400}},
          {"chunk data longer than its size",
           post_chunked("5\r\nhelloXX\r\n0\r\n\r\n") + kHidden,
           {400}},
          {"LF-terminated chunks", post_chunked("5\nhello\n0\n\n") + kHidden, {400}},
          // Beast would merge them into the header: a second Host, or an
          // Authorization the header lacked.
          {"a trailer section with a Host field",
           post_chunked("3\r\nabc\r\n0\r\nHost: y\r\n\r\n") + kHidden,
           {400},
           true,
           "trailer fields"},
          {"a trailer section with any field",
           post_chunked("0\r\nX-Checksum: 1\r\n\r\n") + kHidden,
           {400},
           true,
           "trailer fields"},
          {"a chunk beyond max_body_bytes",
           post_chunked("100000\r\n") + kHidden,
           {413},
           true,
           "body too large"},
          {"chunks adding up to more than max_body_bytes",
           post_chunked("7d0\r\n" + std::string(2000, 'a') + "\r\n7d0\r\n" +
                        std::string(2000, 'a') + "\r\n7d0\r\n") +
               kHidden,
           {413},
           true,
           "body too large"},
      });
}

// A valid request, then bytes that are not one: the first is answered, the
// garbage gets 400 and the connection closes; what follows is never read.
TEST_F(HttpFramingTest, GarbageAfterAPipelinedRequestEndsTheConnection) {
  start();
  expect_outcomes(port(), {
                              {"a text line",
                               kRequest + "XYZ garbage\r\n\r\n" + kHidden,
                               {200, 400},
                               true,
                               "malformed request"},
                              {"binary bytes",
                               kRequest + std::string("\0\1\2garbage", 10),
                               {200, 400},
                               true,
                               "malformed request"},
                              {"a response instead of a request",
                               kRequest + "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n" + kHidden,
                               {200, 400}},
                          });
}

TEST_F(HttpFramingTest, InvalidHttpIs400) {
  start();
  const std::string tls_client_hello("\x16\x03\x01\x00\xa5\x01\x00\x00\xa1\x03\x03", 11);
  expect_outcomes(
      port(),
      {
          {"an HTTP/2 preface", "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", {400}},
          {"a TLS ClientHello", tls_client_hello + std::string(200, 'x') + "\r\n\r\n", {400}},
          {"HTTP/0.9", "GET /v1/id\r\n\r\n", {400}},
          {"HTTP/1.2", "GET /v1/id HTTP/1.2\r\nHost: x\r\n\r\n", {400}},
          {"two spaces after the method", "GET  /v1/id HTTP/1.1\r\nHost: x\r\n\r\n", {400}},
          {"a space inside the target", "GET /v1/ id HTTP/1.1\r\nHost: x\r\n\r\n", {400}},
          {"no method", " /v1/id HTTP/1.1\r\nHost: x\r\n\r\n", {400}},
          {"a field without a colon", get_with("X-A b\r\n"), {400}},
          {"a field without a name", get_with(": b\r\n"), {400}},
      });
}

// Regression: Beast applies its header limit only to what it has not parsed
// yet, and parses complete field lines as they arrive, so a header of many
// short fields passed at up to about 15 KiB with max_header_bytes 8192.
TEST_F(HttpFramingTest, OversizedHeadersAre431AndBodies413) {
  start();  // max_header_bytes 8192, max_body_bytes 4096
  std::string many_fields;
  for (int i = 0; i < 600; ++i) many_fields += "X-F" + std::to_string(i) + ": abcdefghij\r\n";
  // A header of exactly `size` bytes, the final empty line included.
  const auto header_of = [](std::size_t size) {
    const std::string start = "GET /v1/id HTTP/1.1\r\nHost: x\r\nX-Pad: ";
    return start + std::string(size - start.size() - 4, 'p') + "\r\n\r\n";
  };
  expect_outcomes(port(), {{"a header of max_header_bytes", header_of(8192), {200}, false}});
  expect_outcomes(
      port(),
      {
          {"a header one byte longer", header_of(8193), {431}, true, "header too large"},
          {"one huge field",
           get_with("X-Big: " + std::string(20000, 'a') + "\r\n"),
           {431},
           true,
           "header too large"},
          {"600 short fields (12 KiB)", get_with(many_fields), {431}, true, "header too large"},
          {"a huge target",
           "GET /v1/id?" + std::string(10000, 'a') + " HTTP/1.1\r\nHost: x\r\n\r\n",
           {431}},
          // Never ends: refused once the buffer holds more than any header may.
          {"a header without an end", get_with("X-Big: " + std::string(30000, 'a')), {431}},
          // Refused on the header alone, before any of the body is sent.
          {"Content-Length over max_body_bytes",
           "POST /v1/id HTTP/1.1\r\nHost: x\r\nContent-Length: 10000\r\n\r\n",
           {413},
           true,
           "body too large"},
          {"Content-Length of 2^63",
           "POST /v1/id HTTP/1.1\r\nHost: x\r\nContent-Length: 9223372036854775808\r\n\r\n",
           {413}},
          {"a body over max_body_bytes",
           "POST /v1/id HTTP/1.1\r\nHost: x\r\nContent-Length: 5000\r\n\r\n" +
               std::string(5000, 'b'),
           {413}},
      });
}

// RFC 9112 3.2: one Host field in HTTP/1.1, at most one in HTTP/1.0.
TEST_F(HttpFramingTest, HostIsRequiredOnce) {
  start();
  expect_outcomes(port(), {
                              {"no Host in HTTP/1.1",
                               "GET /v1/id HTTP/1.1\r\n\r\n" + kHidden,
                               {400},
                               true,
                               "needs a Host field"},
                              {"two Host lines",
                               get_with("Host: y\r\n") + kHidden,
                               {400},
                               true,
                               "more than one Host field"},
                              {"no Host in HTTP/1.0", "GET /v1/id HTTP/1.0\r\n\r\n", {200}, true},
                              {"two Host lines in HTTP/1.0",
                               "GET /v1/id HTTP/1.0\r\nHost: x\r\nHost: y\r\n\r\n",
                               {400},
                               true,
                               "more than one Host field"},
                          });
  expect_outcomes(
      port(),
      {{"an empty Host", "GET /v1/id HTTP/1.1\r\nHost:\r\n\r\n" + kRequest, {200, 200}, false}});
}

// A client that sends its requests and shuts down its sending side
// (shutdown(SHUT_WR), as `nc -N` does) still gets every answer; then the
// server closes too. A request cut short by the half-close gets none, and
// the connection is closed at once rather than at the read timeout.
TEST_F(HttpFramingTest, HalfClosedConnectionsGetTheirAnswersThenClose) {
  start();
  const auto one = send_and_collect(port(), kRequest, true);
  ASSERT_EQ(one.replies.size(), 1u);
  EXPECT_EQ(one.replies[0].status, 200);
  EXPECT_TRUE(one.closed);

  const auto three = send_and_collect(port(), kRequest + kRequest + kRequest, true);
  ASSERT_EQ(three.replies.size(), 3u);
  std::set<std::string> ids;
  for (const auto& reply : three.replies) {
    EXPECT_EQ(reply.status, 200);
    ids.insert(reply.body);
  }
  EXPECT_EQ(ids.size(), 3u);
  EXPECT_TRUE(three.closed);

  const auto begin = std::chrono::steady_clock::now();
  const auto cut = send_and_collect(port(), "GET /v1/id HTTP/1.1\r\nHo", true);
  EXPECT_TRUE(cut.replies.empty());
  EXPECT_TRUE(cut.closed);
  EXPECT_LT(std::chrono::steady_clock::now() - begin, std::chrono::seconds{3});
}

// A client that asks for large answers and resets the connection without
// reading them: the server's write fails, and it carries on.
TEST_F(HttpFramingTest, ClientsResettingMidAnswerDoNotHurt) {
  start();
  for (int i = 0; i < 20; ++i) {
    RawConnection connection(port());
    std::string requests;
    for (int r = 0; r < 10; ++r) {
      requests += "GET /v1/ids?count=10000 HTTP/1.1\r\nHost: x\r\n\r\n";
    }
    ASSERT_TRUE(connection.send(requests));
  }  // closed with unread data: a reset
  const auto outcome = send_and_collect(port(), kRequest, true);
  ASSERT_EQ(outcome.replies.size(), 1u);
  EXPECT_EQ(outcome.replies[0].status, 200);
}

}  // namespace
}  // namespace snowid
