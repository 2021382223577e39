#include "resp_commands.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <charconv>

#include "resp_request_parser.h"

namespace snowid::server {

namespace {
constexpr std::size_t kAny = kAnyNumberOfArguments;
constexpr InTransaction kQueued = InTransaction::kQueued;
constexpr InTransaction kAtOnce = InTransaction::kAtOnce;
constexpr InTransaction kRefused = InTransaction::kRefused;

constexpr std::array<RespCommand, kOther> kRows{{
    {kIncr, "incr", 2, 2, "write fast", 1, 1, kQueued},
    {kIncrBy, "incrby", 3, 3, "write fast", 1, 1, kQueued},
    {kSnowidId, "snowid.id", 1, 1, "fast", 0, 0, kQueued},
    {kSnowidIds, "snowid.ids", 2, 2, "fast", 0, 0, kQueued},
    {kSnowidDecode, "snowid.decode", 2, 2, "fast", 0, 0, kQueued},
    {kSnowidInfo, "snowid.info", 1, 1, "fast", 0, 0, kQueued},
    {kSnowidBusiness, "snowid.business", 2, 3, "write fast", 1, 1, kQueued},
    {kExists, "exists", 2, kAny, "readonly fast", 1, -1, kQueued},
    {kType, "type", 2, 2, "readonly fast", 1, 1, kQueued},
    {kTtl, "ttl", 2, 2, "readonly fast", 1, 1, kQueued},
    {kPttl, "pttl", 2, 2, "readonly fast", 1, 1, kQueued},
    {kMulti, "multi", 1, 1, "fast no_multi", 0, 0, kRefused},
    {kExec, "exec", 1, 1, "", 0, 0, kAtOnce},
    {kDiscard, "discard", 1, 1, "fast", 0, 0, kAtOnce},
    {kUnwatch, "unwatch", 1, 1, "fast", 0, 0, kQueued},
    {kPing, "ping", 1, 2, "fast", 0, 0, kQueued},
    {kEcho, "echo", 2, 2, "fast", 0, 0, kQueued},
    {kHello, "hello", 1, kAny, "noauth fast no_multi", 0, 0, kRefused},
    {kAuth, "auth", 2, 3, "noauth fast", 0, 0, kQueued},
    {kClient, "client", 2, 64, "", 0, 0, kQueued},
    {kSelect, "select", 2, 2, "fast", 0, 0, kQueued},
    {kQuit, "quit", 1, kAny, "noauth fast", 0, 0, kAtOnce},
    {kCommandCommand, "command", 1, kAny, "", 0, 0, kQueued},
    {kInfo, "info", 1, kAny, "", 0, 0, kQueued},
    {kConfig, "config", 2, 64, "", 0, 0, kQueued},
}};

constexpr bool rows_in_order() {
  for (std::size_t i = 0; i < kRows.size(); ++i) {
    if (kRows[i].id != i) return false;
  }
  return true;
}
static_assert(rows_in_order(), "row i of kRespCommands must be RespCommandId i");

}  // namespace

const std::array<RespCommand, kOther> kRespCommands = kRows;

std::optional<std::int64_t> integer_argument(std::string_view text) {
  std::int64_t value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc{} || end != text.data() + text.size()) return std::nullopt;
  return value;
}

bool incrby_increment(std::string_view text, std::int64_t& count, std::string& refusal) {
  const auto value = integer_argument(text);
  if (!value) {
    refusal = "ERR value is not an integer or out of range";
  } else if (*value < 1) {
    refusal = "ERR increment must be at least 1: numbers are only handed out";
  } else {
    count = *value;
  }
  return refusal.empty();
}

bool snowid_ids_count(std::string_view text, std::int64_t& count, std::string& refusal) {
  const auto value = integer_argument(text);
  if (!value || *value < 1) {
    refusal = "ERR count must be a positive integer";
    return false;
  }
  count = *value;
  return true;
}

namespace {

// The name of the first command of a multi-bulk request at the front of
// `bytes` (*<n>\r\n$<len>\r\n<name>), "" if the bytes cannot begin one,
// nullopt until it has arrived whole. `longest`: a longer name is "".
std::optional<std::string_view> multibulk_name(std::string_view bytes, std::size_t longest) {
  const std::size_t count_end = bytes.find("\r\n");
  if (count_end == std::string_view::npos) {
    if (bytes.size() > kMaxRespCountLineBytes) return std::string_view();
    return std::nullopt;
  }
  std::string_view rest = bytes.substr(count_end + 2);
  if (rest.empty()) return std::nullopt;
  const std::size_t length_end = rest.find("\r\n");
  if (rest[0] != '$') return std::string_view();
  if (length_end == std::string_view::npos) {
    if (rest.size() > kMaxRespCountLineBytes) return std::string_view();
    return std::nullopt;
  }
  std::size_t length = 0;
  const auto [end, ec] = std::from_chars(rest.data() + 1, rest.data() + length_end, length);
  if (ec != std::errc{} || end != rest.data() + length_end || length > longest) {
    return std::string_view();
  }
  rest = rest.substr(length_end + 2);
  if (rest.size() < length) return std::nullopt;
  return rest.substr(0, length);
}

}  // namespace

std::optional<bool> resp_first_command_authenticates(std::string_view bytes) {
  constexpr std::size_t kLongest = 5;  // "HELLO"
  std::optional<std::string_view> name;
  if (!bytes.empty() && bytes[0] == '*') {
    name = multibulk_name(bytes, kLongest);
  } else {
    // An inline command: its first word.
    const std::size_t start = bytes.find_first_not_of(" \t");
    const std::size_t end = bytes.find_first_of(" \t\r\n", start);
    if (start == std::string_view::npos || end == std::string_view::npos) {
      const bool too_long = start != std::string_view::npos && bytes.size() - start > kLongest;
      if (!too_long) return std::nullopt;
      name = std::string_view();
    } else {
      name = bytes.substr(start, end - start);
    }
  }
  if (!name) return std::nullopt;
  return same_name(*name, "AUTH") || same_name(*name, "HELLO");
}

bool same_name(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

std::string printable(std::string_view text) {
  std::string out;
  for (char c : text.substr(0, 64)) out += std::isprint(static_cast<unsigned char>(c)) ? c : '?';
  return out;
}

const RespCommand* find_resp_command(std::string_view name) {
  for (const RespCommand& command : kRespCommands) {
    if (same_name(name, command.name)) return &command;
  }
  return nullptr;
}

std::vector<std::string> resp_command_names() {
  std::vector<std::string> names;
  for (const RespCommand& command : kRespCommands) names.emplace_back(command.name);
  names.emplace_back("other");
  return names;
}

namespace {

struct UnservedCommands {
  std::array<std::string_view, 8> names;  // "" past the last
  std::string_view reason;
};

constexpr std::array<UnservedCommands, 6> kUnserved{{
    {{"get", "mget", "getex", "getdel", "strlen"},
     "a tag has no current value shared by every client and node; INCR returns "
     "each number as "
     "it is handed out (EXISTS, TYPE and TTL answer whether this node serves "
     "the tag)"},
    {{"set", "setnx", "setex", "psetex", "getset", "mset", "msetnx", "setrange"},
     "a tag's first number is fixed when the tag is created (`snowid segment "
     "create TAG --start "
     "N`, or by its first INCR with segment_auto_create)"},
    {{"decr", "decrby", "incrbyfloat"},
     "numbers are only handed out, never given back; use INCR or INCRBY"},
    {{"del", "unlink", "rename", "renamenx", "copy", "move"},
     "tags live in the segment store and are never removed, lest numbers "
     "repeat (`snowid segment "
     "list` shows them)"},
    {{"expire", "pexpire", "expireat", "pexpireat", "persist"},
     "tags never expire (TTL answers -1)"},
    {{"watch"},
     "a tag's number moves with every INCR of any client on any node; MULTI … "
     "EXEC without WATCH "
     "runs the queued commands together"},
}};

}  // namespace

std::optional<std::string_view> unserved_command_reason(std::string_view name) {
  for (const UnservedCommands& group : kUnserved) {
    for (std::string_view unserved : group.names) {
      if (!unserved.empty() && same_name(name, unserved)) return group.reason;
    }
  }
  return std::nullopt;
}

namespace {

// COMMAND's description of one row: name, arity (negative: at least),
// flags, first key, last key, key step.
void describe(const RespCommand& command, RespReply& reply) {
  reply.array(6);
  reply.bulk(command.name);
  const auto min = static_cast<std::int64_t>(command.min_arguments);
  reply.integer(command.min_arguments == command.max_arguments ? min : -min);
  std::vector<std::string_view> flags;
  for (std::string_view rest = command.flags; !rest.empty();) {
    const auto space = rest.find(' ');
    flags.push_back(rest.substr(0, space));
    rest = space == std::string_view::npos ? "" : rest.substr(space + 1);
  }
  reply.array(flags.size());
  for (auto flag : flags) reply.status(flag);
  reply.integer(command.first_key);
  reply.integer(command.last_key);
  reply.integer(command.first_key == 0 ? 0 : 1);
}

}  // namespace

void answer_command_docs(const std::vector<std::string_view>& args, RespReply& reply) {
  if (args.size() == 1) {
    reply.array(kRespCommands.size());
    for (const RespCommand& command : kRespCommands) describe(command, reply);
  } else if (same_name(args[1], "COUNT") && args.size() == 2) {
    reply.integer(static_cast<std::int64_t>(kRespCommands.size()));
  } else if (same_name(args[1], "INFO")) {
    reply.array(args.size() - 2);
    for (std::size_t i = 2; i < args.size(); ++i) {
      const RespCommand* command = find_resp_command(args[i]);
      command == nullptr ? reply.null() : describe(*command, reply);
    }
  } else if (same_name(args[1], "DOCS")) {
    reply.map(0);  // no documentation served: clients fall back to their own
  } else {
    reply.error(fmt::format("ERR unknown subcommand or wrong number of arguments for '{}'",
                            printable(args[1])));
  }
}

}  // namespace snowid::server
