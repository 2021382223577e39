// RespRequestParser: both request forms, Redis's errors, the limits at their
// boundaries, and that a command parses alike whole, split anywhere, and
// pipelined.
#include "resp_request_parser.h"

#include <gtest/gtest.h>
#include <malloc.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace snowid::server {
namespace {

using namespace std::string_literals;
using Outcome = RespRequestParser::Outcome;

constexpr RespLimits kLimits{.max_bulk_bytes = std::size_t{2} * 1024 * 1024,
                             .max_arguments = 1024,
                             .max_inline_bytes = std::size_t{64} * 1024};

// What a connection made of its bytes, one line per event: a command as its
// arguments in brackets and the bytes it took, an error, or "need more" when
// bytes were left waiting at the end.
using Events = std::vector<std::string>;

std::string describe_command(const RespRequestParser& parser) {
  std::string text;
  for (std::string_view argument : parser.arguments()) text += "[" + std::string(argument) + "]";
  return text + " " + std::to_string(parser.consumed());
}

// Serves `input` as a connection would: in reads of chunk_size bytes (0:
// all at once), each appended to its buffer, every complete command parsed
// and erased from the buffer's front.
Events serve(std::string_view input, std::size_t chunk_size, const RespLimits& limits = kLimits) {
  RespRequestParser parser;
  std::string buffer;
  Events events;
  std::size_t sent = 0;
  while (true) {
    const Outcome outcome = parser.parse(buffer, limits);
    if (outcome == Outcome::kCommand) {
      events.push_back(describe_command(parser));
      buffer.erase(0, parser.consumed());
      continue;
    }
    if (outcome == Outcome::kError) {
      events.push_back("error: " + parser.error());
      return events;
    }
    if (sent == input.size()) {
      if (!buffer.empty()) events.push_back("need more");
      return events;
    }
    const std::size_t size = chunk_size == 0 ? input.size() - sent : chunk_size;
    const std::string_view chunk = input.substr(sent, size);
    buffer += chunk;
    sent += chunk.size();
  }
}

// Parses one command from the front of `input` in one call.
struct Parsed {
  Outcome outcome;
  std::vector<std::string> arguments;
  std::size_t consumed;
  std::string error;
};

Parsed parse_once(std::string_view input, const RespLimits& limits = kLimits) {
  RespRequestParser parser;
  Parsed parsed{parser.parse(input, limits), {}, 0, {}};
  for (std::string_view argument : parser.arguments()) parsed.arguments.emplace_back(argument);
  parsed.consumed = parser.consumed();
  parsed.error = parser.error();
  return parsed;
}

using Arguments = std::vector<std::string>;

void expect_command(std::string_view input, const Arguments& arguments,
                    const RespLimits& limits = kLimits) {
  const Parsed parsed = parse_once(input, limits);
  ASSERT_EQ(parsed.outcome, Outcome::kCommand) << parsed.error;
  EXPECT_EQ(parsed.arguments, arguments);
  EXPECT_EQ(parsed.consumed, input.size());
}

void expect_error(std::string_view input, std::string_view error,
                  const RespLimits& limits = kLimits) {
  const Parsed parsed = parse_once(input, limits);
  ASSERT_EQ(parsed.outcome, Outcome::kError);
  EXPECT_EQ(parsed.error, error);
  EXPECT_TRUE(parsed.arguments.empty());
}

void expect_need_more(std::string_view input, const RespLimits& limits = kLimits) {
  EXPECT_EQ(parse_once(input, limits).outcome, Outcome::kNeedMore);
}

// --- Multi-bulk commands --------------------------------------------------

TEST(RespMultibulk, ParsesWhatRedisCliSends) {
  expect_command("*2\r\n$4\r\nINCR\r\n$6\r\norders\r\n", {"INCR", "orders"});
  expect_command("*2\r\n$5\r\nHELLO\r\n$1\r\n3\r\n", {"HELLO", "3"});
  expect_command("*1\r\n$9\r\nSNOWID.ID\r\n", {"SNOWID.ID"});
}

TEST(RespMultibulk, TakesOnlyItsOwnBytes) {
  const Parsed parsed = parse_once("*1\r\n$4\r\nPING\r\n*1\r\n$4\r\nPI");
  ASSERT_EQ(parsed.outcome, Outcome::kCommand);
  EXPECT_EQ(parsed.arguments, Arguments{"PING"});
  EXPECT_EQ(parsed.consumed, 14u);
}

TEST(RespMultibulk, ArgumentsAreViewsIntoTheInput) {
  const std::string input = "*2\r\n$4\r\nINCR\r\n$6\r\norders\r\n";
  RespRequestParser parser;
  ASSERT_EQ(parser.parse(input, kLimits), Outcome::kCommand);
  ASSERT_EQ(parser.arguments().size(), 2u);
  EXPECT_EQ(parser.arguments()[0].data(), input.data() + 8);
  EXPECT_EQ(parser.arguments()[1].data(), input.data() + 18);
}

TEST(RespMultibulk, ACountOfZeroOrLessIsAnEmptyCommand) {
  expect_command("*0\r\n", {});
  expect_command("*-1\r\n", {});
  expect_command("*-5\r\n", {});
  expect_command("*-9223372036854775808\r\n", {});
}

TEST(RespMultibulk, AcceptsAnEmptyArgument) {
  expect_command("*2\r\n$3\r\nGET\r\n$0\r\n\r\n", {"GET", ""});
}

TEST(RespMultibulk, IsBinarySafe) {
  const std::string payload = "a\0b\r\nc\r\n$1\r\n*"s;
  expect_command("*1\r\n$" + std::to_string(payload.size()) + "\r\n" + payload + "\r\n", {payload});
}

TEST(RespMultibulk, WaitsForEveryPart) {
  const std::string command = "*2\r\n$4\r\nINCR\r\n$6\r\norders\r\n";
  for (std::size_t size = 0; size < command.size(); ++size) {
    SCOPED_TRACE(size);
    expect_need_more(std::string_view(command).substr(0, size));
  }
}

TEST(RespMultibulk, RefusesABadCount) {
  for (const char* input :
       {"*\r\n", "*abc\r\n", "*+1\r\n", "*01\r\n", "*00\r\n", "*-0\r\n", "* 1\r\n", "*1 \r\n",
        "*1x\r\n", "*-\r\n", "*--1\r\n", "*1\rx", "*1\r\r\n", "*99999999999999999999\r\n",
        "*-99999999999999999999\r\n"}) {
    SCOPED_TRACE(input);
    expect_error(input, "Protocol error: invalid multibulk length");
  }
}

TEST(RespMultibulk, RefusesABadBulkLength) {
  for (const char* input :
       {"*1\r\n$\r\n", "*1\r\n$x\r\n", "*1\r\n$+1\r\n", "*1\r\n$01\r\n", "*1\r\n$-1\r\n",
        "*1\r\n$-5\r\n", "*1\r\n$1\rx", "*1\r\n$99999999999999999999\r\n"}) {
    SCOPED_TRACE(input);
    expect_error(input, "Protocol error: invalid bulk length");
  }
}

TEST(RespMultibulk, RefusesAnArgumentThatIsNotABulk) {
  expect_error("*1\r\nx", "Protocol error: expected '$', got 'x'");
  expect_error("*2\r\n$1\r\na\r\n:1\r\n", "Protocol error: expected '$', got ':'");
  expect_error("*1\r\n\r\n", "Protocol error: expected '$', got '\\x0d'");
  expect_error("*1\r\n\xff", "Protocol error: expected '$', got '\\xff'");
}

TEST(RespMultibulk, RefusesABulkNotFollowedByCrlf) {
  expect_error("*1\r\n$3\r\nabcd\r\n", "Protocol error: expected CRLF after bulk data");
  expect_error("*1\r\n$3\r\nabc\n\r", "Protocol error: expected CRLF after bulk data");
  expect_error("*1\r\n$3\r\nabc\rx", "Protocol error: expected CRLF after bulk data");
}

TEST(RespMultibulk, BoundsTheCountLines) {
  const std::string longest_count(kMaxRespCountLineBytes - 1, '1');
  // A line of kMaxRespCountLineBytes is read (and its number refused) ...
  expect_error("*" + longest_count + "\r\n", "Protocol error: invalid multibulk length");
  expect_error("*1\r\n$" + longest_count + "\r\n", "Protocol error: invalid bulk length");
  expect_need_more("*" + longest_count);
  expect_need_more("*1\r\n$" + longest_count);
  // ... a longer one is refused before its end arrives.
  expect_error("*" + longest_count + "1", "Protocol error: too big mbulk count string");
  expect_error("*1\r\n$" + longest_count + "1", "Protocol error: too big bulk count string");
}

TEST(RespMultibulk, HoldsTheArgumentCountToItsLimit) {
  const RespLimits limits{.max_bulk_bytes = 16, .max_arguments = 3, .max_inline_bytes = 64};
  expect_command("*3\r\n$1\r\na\r\n$1\r\nb\r\n$1\r\nc\r\n", {"a", "b", "c"}, limits);
  expect_error("*4\r\n", "Protocol error: invalid multibulk length", limits);
}

TEST(RespMultibulk, HoldsTheBulkLengthToItsLimit) {
  const RespLimits limits{.max_bulk_bytes = 5, .max_arguments = 3, .max_inline_bytes = 64};
  expect_command("*1\r\n$5\r\nabcde\r\n", {"abcde"}, limits);
  expect_error("*1\r\n$6\r\n", "Protocol error: invalid bulk length", limits);
}

// The bytes the process has allocated and not freed, as glibc counts them
// (under AddressSanitizer, whose malloc glibc does not see, the count stands
// still and the checks below pass without showing anything).
std::size_t heap_in_use() {
  const struct mallinfo2 info = mallinfo2();
  return info.uordblks + info.hblkhd;
}

// hiredis 0.14 callocs a pointer per declared element; this parser waits.
TEST(RespMultibulk, AllocatesNothingForAHugeDeclaredLength) {
  const RespLimits unbounded{
      .max_bulk_bytes = SIZE_MAX, .max_arguments = SIZE_MAX, .max_inline_bytes = SIZE_MAX};
  const std::size_t before = heap_in_use();
  RespRequestParser parser;
  EXPECT_EQ(parser.parse("*2147483648\r\n$9223372036854775807\r\nab", unbounded),
            Outcome::kNeedMore);
  EXPECT_LT(heap_in_use() - before, 1024u);
  EXPECT_EQ(parser.parse("*1\r\n$18446744073709551615\r\n", unbounded), Outcome::kError);
  EXPECT_EQ(parser.error(), "Protocol error: invalid bulk length");
  EXPECT_LT(heap_in_use() - before, 1024u);

  expect_error("*2147483648\r\n", "Protocol error: invalid multibulk length");
  expect_error("*2000000000\r\n", "Protocol error: invalid multibulk length");
  expect_error("*1\r\n$99999999999999999999\r\n", "Protocol error: invalid bulk length");
}

// --- Inline commands ------------------------------------------------------

TEST(RespInline, SplitsALineOnBlanks) {
  expect_command("PING\r\n", {"PING"});
  expect_command("PING\n", {"PING"});
  expect_command("  INCR \t orders  \r\n", {"INCR", "orders"});
  expect_command("a\vb \fc\n", {"a\vb", "c"});
  expect_command("SNOWID.ID\r\r\n", {"SNOWID.ID"});
}

TEST(RespInline, AnEmptyLineIsAnEmptyCommand) {
  expect_command("\r\n", {});
  expect_command("\n", {});
  expect_command(" \t \r\n", {});
}

TEST(RespInline, UndoesQuotesAndEscapes) {
  expect_command("SET \"a b\" 'c d'\r\n", {"SET", "a b", "c d"});
  expect_command(R"("\x41\x7a\n\r\t\b\a\\\"\q")"s + "\n", {"Az\n\r\t\b\a\\\"q"});
  expect_command(R"("\x4" "\xzz" "\x")"s + "\n", {"x4", "xzz", "x"});
  expect_command(R"('it\'s' 'a\nb' 'a\\b')"s + "\n", {"it's", "a\\nb", "a\\\\b"});
  expect_command("a\"b c\" d\n", {"ab c", "d"});
  expect_command("\"\" ''\n", {"", ""});
  expect_command("\"a\0b\"\n"s, {"a\0b"s});
}

TEST(RespInline, RefusesUnbalancedQuotes) {
  for (const char* line :
       {"\"abc\n", "'abc\n", "\"a\"b\n", "'a'b\n", "\"abc\\\n", "'abc\\'\n", "a \"b\r\n"}) {
    SCOPED_TRACE(line);
    expect_error(line, "Protocol error: unbalanced quotes in request");
  }
}

TEST(RespInline, WaitsForTheNewline) {
  expect_need_more("PING");
  expect_need_more("PING\r");
  expect_need_more("\"unbalanced");
}

TEST(RespInline, HoldsTheLineToItsLimit) {
  const RespLimits limits{.max_bulk_bytes = 64, .max_arguments = 8, .max_inline_bytes = 10};
  expect_command("123456789\r\n", {"123456789"}, limits);  // 10 bytes before '\n'
  expect_command("1234567890\n", {"1234567890"}, limits);
  expect_need_more("1234567890", limits);
  expect_error("12345678901", "Protocol error: too big inline request", limits);
  expect_error("1234567890\r\n", "Protocol error: too big inline request", limits);
}

TEST(RespInline, HoldsItsArgumentsToTheMultibulkLimits) {
  const RespLimits limits{.max_bulk_bytes = 3, .max_arguments = 2, .max_inline_bytes = 64};
  expect_command("abc de\n", {"abc", "de"}, limits);
  expect_command("\"\\x41bc\"\n", {"Abc"}, limits);
  expect_error("abc de f\n", "Protocol error: too big inline request", limits);
  expect_error("abcd\n", "Protocol error: too big inline request", limits);
}

// --- Streams of commands --------------------------------------------------

const std::vector<std::string>& streams() {
  static const std::vector<std::string> kStreams = {
      "*2\r\n$4\r\nINCR\r\n$6\r\norders\r\n",
      "*2\r\n$5\r\nHELLO\r\n$1\r\n3\r\n"
      "*1\r\n$4\r\nPING\r\n"
      "*3\r\n$10\r\nSNOWID.IDS\r\n$1\r\n5\r\n$0\r\n\r\n",
      "PING\r\nINCR orders\n*0\r\n\r\n*-1\r\nSET \"a b\" 'c'\r\n",
      "*1\r\n$8\r\na\0\r\n\r\nbc\r\n*1\r\n$1\r\n$\r\n"s,
      "*1\r\n$4\r\nPING\r\n*1\r\n$-1\r\n",
      "PING\r\n*x\r\n",
      "*1\r\nINCR\r\n",
      "*1\r\n$3\r\nabcd",
      "\"a\" \"b\"c\r\n",
      "*3\r\n$1\r\na\r\n$1\r\nb",
      "*" + std::string(kMaxRespCountLineBytes + 8, '1'),
  };
  return kStreams;
}

TEST(RespStream, ParsesPipelinedCommandsOneAfterTheOther) {
  EXPECT_EQ(serve(streams()[1], 0), (Events{"[HELLO][3] 22", "[PING] 14", "[SNOWID.IDS][5][] 34"}));
  EXPECT_EQ(serve(streams()[2], 0),
            (Events{"[PING] 6", "[INCR][orders] 12", " 4", " 2", " 5", "[SET][a b][c] 15"}));
  EXPECT_EQ(serve(streams()[4], 0),
            (Events{"[PING] 14", "error: Protocol error: invalid bulk length"}));
}

TEST(RespStream, ParsesAlikeSplitAtEveryByte) {
  for (const std::string& stream : streams()) {
    SCOPED_TRACE(stream);
    const Events whole = serve(stream, 0);
    for (std::size_t first = 1; first < stream.size(); ++first) {
      SCOPED_TRACE(first);
      // The first read of `first` bytes, the rest in one read.
      RespRequestParser parser;
      std::string buffer = stream.substr(0, first);
      Events events;
      const std::string rest = stream.substr(first);
      bool rest_sent = false;
      while (true) {
        const Outcome outcome = parser.parse(buffer, kLimits);
        if (outcome == Outcome::kCommand) {
          events.push_back(describe_command(parser));
          buffer.erase(0, parser.consumed());
        } else if (outcome == Outcome::kError) {
          events.push_back("error: " + parser.error());
          break;
        } else if (!rest_sent) {
          buffer += rest;
          rest_sent = true;
        } else {
          if (!buffer.empty()) events.push_back("need more");
          break;
        }
      }
      EXPECT_EQ(events, whole);
    }
    for (std::size_t chunk_size : {1u, 2u, 3u, 7u}) {
      SCOPED_TRACE(chunk_size);
      EXPECT_EQ(serve(stream, chunk_size), whole);
    }
  }
}

TEST(RespStream, StartsAfreshAfterAnError) {
  RespRequestParser parser;
  ASSERT_EQ(parser.parse("*x\r\n", kLimits), Outcome::kError);
  ASSERT_EQ(parser.parse("PING\r\n", kLimits), Outcome::kCommand);
  EXPECT_EQ(parser.arguments().front(), "PING");
  EXPECT_TRUE(parser.error().empty());
}

TEST(RespStream, StartsAfreshOnAShorterInput) {
  RespRequestParser parser;
  ASSERT_EQ(parser.parse("*1\r\n$4\r\nPI", kLimits), Outcome::kNeedMore);
  ASSERT_EQ(parser.parse("PING\r\n", kLimits), Outcome::kCommand);
  EXPECT_EQ(parser.arguments().front(), "PING");
}

// A command that arrives a byte at a time is scanned once: rescanning from
// its start on every read would take minutes here, not milliseconds.
TEST(RespStream, ResumesWithoutRescanning) {
  constexpr std::size_t kMebibyte = std::size_t{1024} * 1024;
  const RespLimits limits{
      .max_bulk_bytes = kMebibyte, .max_arguments = 4, .max_inline_bytes = kMebibyte};
  const std::string bulk =
      "*1\r\n$" + std::to_string(kMebibyte) + "\r\n" + std::string(kMebibyte, 'x') + "\r\n";
  const std::string line = std::string(kMebibyte - 2, 'y') + "\r\n";
  for (const std::string& command : {bulk, line}) {
    const auto start = std::chrono::steady_clock::now();
    RespRequestParser parser;
    std::string buffer;
    buffer.reserve(command.size());
    Outcome outcome = Outcome::kNeedMore;
    for (char byte : command) {
      buffer.push_back(byte);
      outcome = parser.parse(buffer, limits);
      if (outcome != Outcome::kNeedMore) break;
    }
    ASSERT_EQ(outcome, Outcome::kCommand) << parser.error();
    EXPECT_EQ(parser.consumed(), command.size());
    ASSERT_EQ(parser.arguments().size(), 1u);
    EXPECT_EQ(parser.arguments()[0].size(),
              command.size() == line.size() ? kMebibyte - 2 : kMebibyte);
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(3));
  }
}

}  // namespace
}  // namespace snowid::server
