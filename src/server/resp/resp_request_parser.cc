#include "resp_request_parser.h"

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <cstring>
#include <optional>
#include <system_error>

namespace snowid::server {
namespace {

// The most argument slots reserved from a declared count: more grow one by
// one as their bytes arrive, so a declared count costs nothing by itself.
constexpr std::size_t kMaxReservedArguments = 16;

constexpr const char* kInvalidMultibulkLength = "Protocol error: invalid multibulk length";
constexpr const char* kInvalidBulkLength = "Protocol error: invalid bulk length";
constexpr const char* kTooBigInline = "Protocol error: too big inline request";
constexpr const char* kUnbalancedQuotes = "Protocol error: unbalanced quotes in request";

// A count as Redis's string2ll reads it: an optional '-', then "0" or a digit
// 1-9 followed by digits, within a signed 64-bit integer. No '+', no blanks,
// no leading zeros, no "-0".
std::optional<std::int64_t> parse_count(std::string_view text) {
  std::string_view digits = text;
  if (!digits.empty() && digits.front() == '-') digits.remove_prefix(1);
  if (digits.empty() || digits.front() < '0' || digits.front() > '9') return std::nullopt;
  if (digits.front() == '0' && text.size() != 1) return std::nullopt;
  std::int64_t value = 0;
  const char* const end = text.data() + text.size();
  const auto [stop, error] = std::from_chars(text.data(), end, value);
  if (error != std::errc() || stop != end) return std::nullopt;
  return value;
}

// A byte for an error message: itself if printable ASCII, else \xHH, so a
// reply line never carries a control character.
std::string shown_byte(char c) {
  const auto byte = static_cast<unsigned char>(c);
  if (byte >= 0x20 && byte < 0x7f) return std::string(1, c);
  constexpr const char* kHex = "0123456789abcdef";
  return {'\\', 'x', kHex[byte >> 4], kHex[byte & 0xf]};
}

// isspace() in the C locale: the blanks sdssplitargs skips between arguments.
bool is_blank(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

// The bytes that end an unquoted argument in sdssplitargs.
bool ends_word(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

bool is_hex_digit(char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return c - 'A' + 10;
}

char escaped(char c) {
  switch (c) {
    case 'n':
      return '\n';
    case 'r':
      return '\r';
    case 't':
      return '\t';
    case 'b':
      return '\b';
    case 'a':
      return '\a';
    default:
      return c;
  }
}

// Splits an inline line as Redis's sdssplitargs does, except that a NUL byte
// is an ordinary byte (sdssplitargs stops at it). The arguments go to `out`
// back to back, one span (offset, length) each. Returns nullptr, or the
// error: unbalanced quotes, or more arguments or a longer one than `limits`.
const char* split_inline(std::string_view line, const RespLimits& limits, std::string& out,
                         std::vector<std::pair<std::size_t, std::size_t>>& spans) {
  out.clear();
  out.reserve(line.size());  // an argument is never longer than its bytes in the line
  const std::size_t size = line.size();
  std::size_t i = 0;
  while (true) {
    while (i < size && is_blank(line[i])) ++i;
    if (i == size) return nullptr;
    if (spans.size() == limits.max_arguments) return kTooBigInline;
    const std::size_t start = out.size();
    char quote = 0;  // '"' or '\'' inside quotes
    bool done = false;
    while (!done) {
      if (quote != 0) {
        if (i == size) return kUnbalancedQuotes;
        const char c = line[i];
        if (quote == '"' && c == '\\' && i + 3 < size && line[i + 1] == 'x' &&
            is_hex_digit(line[i + 2]) && is_hex_digit(line[i + 3])) {
          out.push_back(static_cast<char>(hex_value(line[i + 2]) * 16 + hex_value(line[i + 3])));
          i += 4;
        } else if (c == '\\' && i + 1 < size && (quote == '"' || line[i + 1] == '\'')) {
          // Between single quotes only \' is an escape.
          out.push_back(escaped(line[i + 1]));
          i += 2;
        } else if (c == quote) {
          // The closing quote must be followed by a blank or the line's end.
          if (i + 1 < size && !is_blank(line[i + 1])) return kUnbalancedQuotes;
          done = true;
          ++i;
        } else {
          out.push_back(c);
          ++i;
        }
      } else if (i == size || ends_word(line[i])) {
        done = true;
      } else {
        const char c = line[i++];
        if (c == '"' || c == '\'') {
          quote = c;
        } else {
          out.push_back(c);
        }
      }
    }
    const std::size_t length = out.size() - start;
    if (length > limits.max_bulk_bytes) return kTooBigInline;
    spans.emplace_back(start, length);
  }
}

}  // namespace

RespRequestParser::Outcome RespRequestParser::parse(std::string_view input,
                                                    const RespLimits& limits) {
  if (input.size() < seen_bytes_) stage_ = Stage::kStart;
  seen_bytes_ = input.size();
  if (stage_ == Stage::kStart) {
    arguments_.clear();
    spans_.clear();
    consumed_ = 0;
    error_.clear();
    position_ = 0;
    scanned_ = 0;
    if (input.empty()) return Outcome::kNeedMore;
    // Redis's test: a command is multi-bulk exactly when it starts with '*'.
    if (input.front() == '*') {
      stage_ = Stage::kCountLine;
    } else {
      stage_ = Stage::kInlineLine;
    }
  }
  if (stage_ == Stage::kInlineLine) return parse_inline(input, limits);
  return parse_multibulk(input, limits);
}

RespRequestParser::Outcome RespRequestParser::parse_multibulk(std::string_view input,
                                                              const RespLimits& limits) {
  if (stage_ == Stage::kCountLine) {
    std::int64_t count = 0;
    if (const auto stop = read_count_line(input, count)) {
      return *stop;
    }
    if (count > 0 && static_cast<std::uint64_t>(count) > limits.max_arguments) {
      return fail(kInvalidMultibulkLength);
    }
    // Redis: a count of zero or less is an empty command.
    if (count <= 0) return complete(input, position_);
    bulks_remaining_ = static_cast<std::size_t>(count);
    spans_.reserve(std::min(bulks_remaining_, kMaxReservedArguments));
    stage_ = Stage::kBulkLine;
  }
  while (true) {
    if (stage_ == Stage::kBulkLine) {
      if (position_ == input.size()) return Outcome::kNeedMore;
      if (input[position_] != '$') {
        return fail("Protocol error: expected '$', got '" + shown_byte(input[position_]) + "'");
      }
      std::int64_t length = 0;
      if (const auto stop = read_count_line(input, length)) {
        return *stop;
      }
      if (length < 0 || static_cast<std::uint64_t>(length) > limits.max_bulk_bytes) {
        return fail(kInvalidBulkLength);
      }
      bulk_length_ = static_cast<std::size_t>(length);
      stage_ = Stage::kBulkData;
    }
    // kBulkData. bulk_length_ is at most INT64_MAX, so the sum cannot wrap.
    if (input.size() - position_ < bulk_length_ + 2) return Outcome::kNeedMore;
    const std::size_t end = position_ + bulk_length_;
    if (input[end] != '\r' || input[end + 1] != '\n') {
      return fail("Protocol error: expected CRLF after bulk data");
    }
    spans_.emplace_back(position_, bulk_length_);
    position_ = end + 2;
    if (--bulks_remaining_ == 0) return complete(input, position_);
    stage_ = Stage::kBulkLine;
  }
}

std::optional<RespRequestParser::Outcome> RespRequestParser::read_count_line(std::string_view input,
                                                                             std::int64_t& count) {
  const bool multibulk = input[position_] == '*';
  const char* const too_long = multibulk ? "Protocol error: too big mbulk count string"
                                         : "Protocol error: too big bulk count string";
  const char* const invalid = multibulk ? kInvalidMultibulkLength : kInvalidBulkLength;
  // The line is the marker at position_ and the number; its '\r' may be at
  // position_ + 1 up to position_ + kMaxRespCountLineBytes.
  const std::size_t window_end = std::min(input.size(), position_ + kMaxRespCountLineBytes + 1);
  const std::size_t from = std::max(scanned_, position_ + 1);
  const void* found = nullptr;
  if (from < window_end) found = std::memchr(input.data() + from, '\r', window_end - from);
  if (found == nullptr) {
    scanned_ = std::max(from, window_end);
    if (window_end == position_ + kMaxRespCountLineBytes + 1) return fail(too_long);
    return Outcome::kNeedMore;
  }
  const auto carriage_return =
      static_cast<std::size_t>(static_cast<const char*>(found) - input.data());
  scanned_ = carriage_return;  // the next call finds it at once
  if (carriage_return + 1 == input.size()) return Outcome::kNeedMore;
  if (input[carriage_return + 1] != '\n') return fail(invalid);
  const auto number = parse_count(input.substr(position_ + 1, carriage_return - position_ - 1));
  if (!number) return fail(invalid);
  count = *number;
  position_ = carriage_return + 2;
  scanned_ = position_;
  return std::nullopt;
}

RespRequestParser::Outcome RespRequestParser::parse_inline(std::string_view input,
                                                           const RespLimits& limits) {
  // The '\n' may be at offset max_inline_bytes at the latest.
  const std::size_t window_end =
      input.size() > limits.max_inline_bytes ? limits.max_inline_bytes + 1 : input.size();
  const void* found = nullptr;
  if (scanned_ < window_end) {
    found = std::memchr(input.data() + scanned_, '\n', window_end - scanned_);
  }
  if (found == nullptr) {
    scanned_ = std::max(scanned_, window_end);
    if (input.size() > limits.max_inline_bytes) return fail(kTooBigInline);
    return Outcome::kNeedMore;
  }
  const auto newline = static_cast<std::size_t>(static_cast<const char*>(found) - input.data());
  std::string_view line = input.substr(0, newline);
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  if (const char* error = split_inline(line, limits, unquoted_, spans_)) return fail(error);
  return complete(unquoted_, newline + 1);
}

RespRequestParser::Outcome RespRequestParser::complete(std::string_view base,
                                                       std::size_t consumed) {
  arguments_.clear();
  for (const auto& [offset, length] : spans_) arguments_.push_back(base.substr(offset, length));
  consumed_ = consumed;
  stage_ = Stage::kStart;
  return Outcome::kCommand;
}

RespRequestParser::Outcome RespRequestParser::fail(std::string message) {
  arguments_.clear();
  consumed_ = 0;
  error_ = std::move(message);
  stage_ = Stage::kStart;
  return Outcome::kError;
}

}  // namespace snowid::server
