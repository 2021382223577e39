// The commands snowidd's RESP listener knows: one row each, read by the
// dispatcher (resp_service.cc: arity, what MULTI may queue), by COMMAND
// (each row's description), and by the metrics (the names, counted in
// snowid_resp_commands_total); the common Redis commands it does not serve,
// each refused with what to use instead; and how numeric arguments are read.
//
// Constant tables: safe from any thread.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "resp_reply.h"

namespace snowid::server {

// The rows of kRespCommands, in order; kOther (last) stands for every other
// name.
enum RespCommandId : std::size_t {
  kIncr,
  kIncrBy,
  kSnowidId,
  kSnowidIds,
  kSnowidDecode,
  kSnowidInfo,
  kSnowidBusiness,
  kExists,
  kType,
  kTtl,
  kPttl,
  kMulti,
  kExec,
  kDiscard,
  kUnwatch,
  kPing,
  kEcho,
  kHello,
  kAuth,
  kClient,
  kSelect,
  kQuit,
  kCommandCommand,
  kInfo,
  kConfig,
  kOther,
};

inline constexpr std::size_t kAnyNumberOfArguments = std::numeric_limits<std::size_t>::max();

// How a command is run after MULTI, before its EXEC.
enum class InTransaction {
  kQueued,   // checked, queued, run by EXEC
  kAtOnce,   // run as it arrives (EXEC, DISCARD, QUIT)
  kRefused,  // refused, which aborts the transaction (MULTI; HELLO, a protocol
             // switch mid-EXEC)
};

struct RespCommand {
  RespCommandId id;
  std::string_view name;  // lower case
  // Arguments, the command's name included: at least min, at most max.
  std::size_t min_arguments;
  std::size_t max_arguments;
  std::string_view flags;  // COMMAND's flags, separated by spaces
  std::int64_t first_key;  // COMMAND's key positions: first, last (-1: to the end), step
  std::int64_t last_key;
  InTransaction in_transaction;
};

// Row i describes the command whose RespCommandId is i.
extern const std::array<RespCommand, kOther> kRespCommands;

// The row of `name` (in any case), or null.
const RespCommand* find_resp_command(std::string_view name);

// The rows' names and "other", indexed by RespCommandId: the metrics' labels.
std::vector<std::string> resp_command_names();

// Why a common Redis command is not served and what to use instead, for
// GET, SET, DECR, DEL, EXPIRE, WATCH and their kin; nullopt for others.
std::optional<std::string_view> unserved_command_reason(std::string_view name);

// Answers COMMAND [COUNT | INFO name… | DOCS …] from the table.
void answer_command_docs(const std::vector<std::string_view>& arguments, RespReply& reply);

// A decimal integer argument, as Redis reads one: optional '-', digits, no
// spaces, within int64.
std::optional<std::int64_t> integer_argument(std::string_view text);

// INCRBY's increment: a positive integer (max_batch is the service's rule);
// false with `refusal` set to the RESP error otherwise.
bool incrby_increment(std::string_view text, std::int64_t& count, std::string& refusal);

// SNOWID.IDS's and SNOWID.BUSINESS's count: a positive integer (max_batch is the service's rule);
// false with `refusal` set to the RESP error otherwise.
bool snowid_ids_count(std::string_view text, std::int64_t& count, std::string& refusal);

// Whether the first command in `bytes`, the start of a connection's input
// (which may end anywhere), is one that authenticates (AUTH, or HELLO, which
// may carry AUTH); nullopt until its name has arrived whole. Bytes that
// cannot begin a command do not authenticate.
std::optional<bool> resp_first_command_authenticates(std::string_view bytes);

// True if `a` and `b` are equal ignoring ASCII case (command names, options).
bool same_name(std::string_view a, std::string_view b);

// At most 64 printable bytes of client text, for an error message.
std::string printable(std::string_view text);

}  // namespace snowid::server
