// Writing RESP2 and RESP3 replies (the Redis protocol) for snowidd's RESP
// listener. A connection speaks RESP2 until HELLO 3; the writer then uses
// RESP3's own types for maps and nulls, and RESP2's equivalents before.
// Snowflake IDs are bulk strings in both (decimal()), never RESP3's big
// numbers, which RESP2-only clients (hiredis 0.14, ioredis) cannot read.
#pragma once

#include <fmt/format.h>

#include <cstdint>
#include <iterator>
#include <string>
#include <string_view>

namespace snowid::server {

class RespReply {
 public:
  explicit RespReply(std::string& out) : out_(out) {}

  void set_resp3(bool on) { resp3_ = on; }
  bool resp3() const { return resp3_; }

  // +text: a short status ("OK", "PONG"); must hold no CR or LF.
  void status(std::string_view text) { line('+', text); }
  // -text: "ERR …", "NOAUTH …"; CR and LF in `text` become spaces.
  void error(std::string_view text) {
    out_ += '-';
    for (char c : text) out_ += (c == '\r' || c == '\n') ? ' ' : c;
    out_ += "\r\n";
  }
  void integer(std::int64_t value) { fmt::format_to(std::back_inserter(out_), ":{}\r\n", value); }
  void bulk(std::string_view bytes) {
    fmt::format_to(std::back_inserter(out_), "${}\r\n", bytes.size());
    out_.append(bytes);
    out_ += "\r\n";
  }
  // An integer as a bulk string of its decimal digits ("$19\r\n…"): what
  // IDs are sent as, since clients that read RESP integers into doubles
  // (JavaScript's) would round one above 2^53.
  void decimal(std::int64_t value) {
    const fmt::format_int digits(value);
    fmt::format_to(std::back_inserter(out_), "${}\r\n", digits.size());
    out_.append(digits.data(), digits.size());
    out_ += "\r\n";
  }
  void null() { out_ += resp3_ ? "_\r\n" : "$-1\r\n"; }
  void array(std::size_t elements) {
    fmt::format_to(std::back_inserter(out_), "*{}\r\n", elements);
  }
  // A map of `pairs` key/value pairs: RESP3's map, or a flat array of
  // 2 × pairs elements in RESP2. The caller writes key, value, key, value, ….
  void map(std::size_t pairs) {
    fmt::format_to(std::back_inserter(out_), "{}{}\r\n", resp3_ ? '%' : '*',
                   resp3_ ? pairs : 2 * pairs);
  }

 private:
  void line(char type, std::string_view text) {
    out_ += type;
    out_.append(text);
    out_ += "\r\n";
  }

  std::string& out_;
  bool resp3_ = false;
};

}  // namespace snowid::server
