// Fuzz target: the bytes a client sends to snowidd's Redis-protocol listener,
// read by RespRequestParser (src/server/resp_request_parser.h) the way a
// connection reads them: each read appended to a buffer, every complete
// command parsed and erased from the buffer's front. Covers multi-bulk and
// inline commands, quotes and escapes, pipelining, the limits, and Redis's
// protocol errors.
//
// Input: the raw bytes. Under each of two sets of limits (roomy, and tight
// enough for the fuzzer to reach every limit) they are served three times:
// in one read, a byte at a time, and in reads of 1 + (byte % 16) bytes, the
// sizes taken from the input's own bytes in turn.
// Checks beyond "no crash, no sanitizer report, no endless loop": all three
// servings parse the same commands and end alike (the same error, or the
// same bytes left waiting); no command has more arguments or a longer one
// than the limits allow; every command takes at least one byte, and a
// multi-bulk command's arguments lie within the bytes it took; every error
// is a "Protocol error: ..." line without a control character.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "resp_request_parser.h"

namespace {

using snowid::server::RespLimits;
using snowid::server::RespRequestParser;
using Outcome = RespRequestParser::Outcome;

constexpr RespLimits kRoomyLimits{
    .max_bulk_bytes = 1024, .max_arguments = 64, .max_inline_bytes = 1024};
constexpr RespLimits kTightLimits{.max_bulk_bytes = 8, .max_arguments = 3, .max_inline_bytes = 24};

// What a connection made of its bytes.
struct Served {
  std::vector<std::vector<std::string>> commands;
  std::string error;             // empty unless the stream ended with one
  std::size_t left_waiting = 0;  // bytes of an incomplete command at the end
  bool operator==(const Served&) const = default;
};

void fail(const char* what) {
  std::fprintf(stderr, "fuzz_resp_parser: %s\n", what);
  std::abort();
}

void check_command(const RespRequestParser& parser, std::string_view buffer,
                   const RespLimits& limits) {
  if (parser.consumed() == 0 || parser.consumed() > buffer.size()) fail("consumed out of range");
  if (parser.arguments().size() > limits.max_arguments) fail("more arguments than the limit");
  const char* const begin = buffer.data();
  const char* const end = begin + parser.consumed();
  for (std::string_view argument : parser.arguments()) {
    if (argument.size() > limits.max_bulk_bytes) fail("an argument longer than the limit");
    if (buffer.front() == '*' &&
        (argument.data() < begin || argument.data() + argument.size() > end)) {
      fail("a multi-bulk argument outside its command's bytes");
    }
  }
}

void check_error(const std::string& error) {
  if (error.rfind("Protocol error: ", 0) != 0) fail("an error not worded as Redis's");
  for (char c : error) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) fail("a control character in an error");
  }
}

// Serves `input` in reads of the sizes next_read() gives.
template <typename NextRead>
Served serve(std::string_view input, const RespLimits& limits, NextRead next_read) {
  RespRequestParser parser;
  Served served;
  std::string buffer;
  std::size_t sent = 0;
  while (true) {
    const Outcome outcome = parser.parse(buffer, limits);
    if (outcome == Outcome::kCommand) {
      check_command(parser, buffer, limits);
      served.commands.emplace_back(parser.arguments().begin(), parser.arguments().end());
      buffer.erase(0, parser.consumed());
    } else if (outcome == Outcome::kError) {
      check_error(parser.error());
      served.error = parser.error();
      return served;
    } else if (sent == input.size()) {
      served.left_waiting = buffer.size();
      return served;
    } else {
      const std::string_view read = input.substr(sent, next_read());
      buffer += read;
      sent += read.size();
    }
  }
}

void serve_three_ways(std::string_view input, const RespLimits& limits) {
  const Served whole = serve(input, limits, [&] { return input.size(); });
  const Served bytewise = serve(input, limits, [] { return std::size_t{1}; });
  std::size_t reads = 0;
  const Served chunked = serve(input, limits, [&] {
    const auto byte = static_cast<unsigned char>(input[reads++ % input.size()]);
    return std::size_t{1} + byte % 16;
  });
  if (!(whole == bytewise)) fail("one read and byte-at-a-time reads parse differently");
  if (!(whole == chunked)) fail("one read and reads of varying sizes parse differently");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  serve_three_ways(input, kRoomyLimits);
  serve_three_ways(input, kTightLimits);
  return 0;
}
