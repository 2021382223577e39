// How snowidd reads Redis-protocol (RESP) requests out of a connection's
// bytes, so that any Redis client can ask it for IDs. It parses what a Redis
// server parses (networking.c, processMultibulkBuffer and processInlineBuffer):
//
//   multi-bulk  *<n>\r\n then n times $<len>\r\n<len bytes>\r\n
//               (what every client library sends)
//   inline      one line up to \n, split on blanks, with "double" quotes
//               (escapes \n \r \t \b \a \xHH, \<any>) and 'single' quotes
//               (escape \'), as sdssplitargs splits it (telnet, health
//               checks that send PING)
//
// Where it is stricter than Redis: the \r\n after a bulk's bytes must be
// there (Redis skips two bytes unseen); a `*` or `$` line ends in \r\n
// within kMaxRespCountLineBytes (Redis: 64 KiB); the first byte of an
// argument must be '$' as soon as it arrives; an inline command is held to
// max_arguments and max_bulk_bytes too. A NUL in an inline line is an
// ordinary byte (sdssplitargs stops at it), and an unprintable byte in
// "expected '$', got 'x'" is written \xHH.
//
// Why not hiredis: Debian 12's hiredis 0.14.1 has a reader for replies, not
// requests. It takes a multi-bulk length with no upper bound and callocs that
// many reply pointers at once (processMultiBulkItem passes it straight to
// createArray; `*2000000000\r\n` asks for 16 GB), knows no inline commands
// (any other first byte is "Protocol error, got ... as reply type byte"), and
// builds a tree of redisReply objects, one allocation per argument.
//
// This parser checks every declared length against RespLimits before it
// trusts it, and allocates nothing in proportion to a length that has not
// arrived: a multi-bulk argument is a view into the caller's bytes, an
// inline one a view into one buffer of the parser no longer than the line.
// A command that arrives in many reads is scanned once: between calls the
// parser keeps offsets (never pointers: the caller's buffer may move) and
// resumes where it stopped.
//
// Not thread-safe: one connection's thread owns one parser.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace snowid::server {

// The most a command may declare or hold. Passed to every parse() call, so a
// connection can use tighter limits before its client has authenticated
// (Redis: 10 arguments and 16 KiB bulks).
struct RespLimits {
  std::size_t max_bulk_bytes;    // one argument's length at most (in both forms)
  std::size_t max_arguments;     // a command's argument count at most (in both forms)
  std::size_t max_inline_bytes;  // an inline command's line before its '\n' at most
};

// The longest `*<n>` or `$<len>` line, without its \r\n, the parser waits
// for; a longer one is an error, as Redis's "too big mbulk count string".
inline constexpr std::size_t kMaxRespCountLineBytes = 64;

// Parses the commands of one connection, one after the other, each from the
// front of the caller's input buffer.
class RespRequestParser {
 public:
  enum class Outcome {
    kCommand,   // arguments() and consumed() describe a complete command
    kNeedMore,  // no complete command yet: call again with more bytes appended
    kError,     // error() says why; the stream cannot be framed any more
  };

  // Parses one command at the front of `input`.
  //
  // After kNeedMore the caller keeps the bytes and calls again with the same
  // bytes plus more appended (the same start); the parser resumes where it
  // stopped. Requires: `input` starts with the bytes of the previous call
  // when that call returned kNeedMore (an input shorter than that one starts
  // the command afresh).
  //
  // After kCommand or kError the next call starts a new command at the front
  // of its input: the caller erases or skips consumed() bytes first (after
  // kError it should answer and close instead).
  Outcome parse(std::string_view input, const RespLimits& limits);

  // After kCommand, until the next parse(): the arguments, views into the
  // `input` of that call (multi-bulk) or into this parser (inline, whose
  // quotes and escapes are undone). A command with no arguments (`*0\r\n`,
  // `*-1\r\n`, an empty inline line) is a kCommand with none, which the
  // caller ignores, as Redis does.
  const std::vector<std::string_view>& arguments() const { return arguments_; }

  // After kCommand: how many bytes of the front of the input the command took.
  std::size_t consumed() const { return consumed_; }

  // After kError: Redis's wording without the "-ERR " prefix, e.g.
  // "Protocol error: invalid multibulk length".
  const std::string& error() const { return error_; }

 private:
  enum class Stage {
    kStart,       // nothing of the command parsed yet
    kCountLine,   // waiting for the \r\n of `*<n>`
    kBulkLine,    // waiting for the \r\n of the next `$<len>`
    kBulkData,    // waiting for <len> bytes and \r\n
    kInlineLine,  // waiting for the \n of an inline line
  };

  Outcome parse_multibulk(std::string_view input, const RespLimits& limits);
  Outcome parse_inline(std::string_view input, const RespLimits& limits);
  // Reads the `*<n>` or `$<len>` line at position_, looking for its \r\n from
  // scanned_ on. Returns nullopt with `count` set and position_ past the
  // line, or what parse() returns: kNeedMore (scanned_ left where to look
  // next), or kError (no '\r' within kMaxRespCountLineBytes, a '\r' without
  // '\n', or not a number).
  std::optional<Outcome> read_count_line(std::string_view input, std::int64_t& count);
  // Ends the command: arguments_ from spans_, as views into `base`.
  Outcome complete(std::string_view base, std::size_t consumed);
  Outcome fail(std::string message);

  Stage stage_ = Stage::kStart;
  std::size_t position_ = 0;         // offset of the first byte not parsed yet
  std::size_t scanned_ = 0;          // offset up to which a line end was looked for
  std::size_t seen_bytes_ = 0;       // the input's size at the previous call
  std::size_t bulks_remaining_ = 0;  // `$` arguments still to come
  std::size_t bulk_length_ = 0;      // of the argument being read (kBulkData)
  std::vector<std::pair<std::size_t, std::size_t>> spans_;  // offset, length
  std::vector<std::string_view> arguments_;
  std::string unquoted_;  // the arguments of an inline line, back to back
  std::size_t consumed_ = 0;
  std::string error_;
};

}  // namespace snowid::server
