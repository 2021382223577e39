#include "resp_service.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cctype>
#include <chrono>
#include <utility>

#include "info_json.h"
#include "resp_commands.h"
#include "resp_reply.h"
#include "resp_request_parser.h"
#include "resp_transaction.h"
#include "snowid/decode.h"
#include "stream_server.h"
#include "time_text.h"

namespace snowid::server {

namespace {

// Redis's limits for a connection that has not authenticated yet.
constexpr std::size_t kUnauthenticatedArguments = 10;
constexpr std::size_t kUnauthenticatedBulkBytes = 16 * 1024;
// An inline command (telnet) is one line of at most this many bytes.
constexpr std::size_t kMaxInlineBytes = 64 * 1024;
// The protocol level snowidd speaks, as INFO and HELLO report it to clients
// that check a server version before using a command.
constexpr std::string_view kRedisProtocolVersion = "7.0.0";

// What every connection of the listener shares; renders the MULTI queues'
// metrics.
struct RespShared final : MetricsSource {
  RespShared(IdService& id_service, RespOptions resp_options)
      : service(id_service), options(std::move(resp_options)), queues(options.max_queued_bytes) {}

  void render(std::string& out) const override {
    fmt::format_to(std::back_inserter(out),
                   "# HELP snowid_resp_queued_commands Commands queued after MULTI on all RESP "
                   "connections, not yet run or discarded.\n"
                   "# TYPE snowid_resp_queued_commands gauge\n"
                   "snowid_resp_queued_commands {}\n"
                   "# HELP snowid_resp_queued_bytes What the queued commands hold (arguments and "
                   "bookkeeping), at most resp_max_queued_bytes.\n"
                   "# TYPE snowid_resp_queued_bytes gauge\n"
                   "snowid_resp_queued_bytes {}\n"
                   "# HELP snowid_resp_refused_queued_total Commands refused after MULTI because "
                   "queuing them would pass a limit (their transactions abort), by limit.\n"
                   "# TYPE snowid_resp_refused_queued_total counter\n",
                   queues.commands(), queues.bytes());
    for (std::size_t i = 0; i < kRespQueueBounds; ++i) {
      const auto bound = static_cast<RespQueueBound>(i);
      fmt::format_to(std::back_inserter(out),
                     "snowid_resp_refused_queued_total{{limit=\"{}\"}} {}\n",
                     resp_queue_bound_name(bound), queues.refusals(bound));
    }
  }

  IdService& service;
  const RespOptions options;
  RespQueues queues;                            // every connection's MULTI queue
  std::atomic<std::int64_t> next_client_id{1};  // CLIENT ID's numbers
};

// One connection: its protocol version, authentication, agent, and the
// parser's state.
class RespConnection final : public StreamHandler {
 public:
  // `trusted`: the peer is in resp_trusted_networks, authenticated from the start.
  RespConnection(std::shared_ptr<RespShared> shared, std::shared_ptr<StreamMetrics> metrics,
                 bool trusted)
      : shared_(std::move(shared)),
        metrics_(std::move(metrics)),
        service_(shared_->service),
        options_(shared_->options),
        token_required_(service_.tokens_required()),
        client_id_(shared_->next_client_id.fetch_add(1)) {
    if (trusted && token_required_) authenticated_ = true;
  }

  bool authenticated() const override { return !token_required_ || authenticated_; }

  void refuse_oversized(std::string& output) override {
    RespReply(output).error(
        "ERR Protocol error: request larger than resp_max_pending_bytes (pipeline fewer or "
        "smaller commands)");
  }

  Step consume(std::string_view input, std::string& output) override {
    Step step;
    RespReply reply(output);
    reply.set_resp3(resp3_);
    while (output.size() <= kMaxGatheredAnswerBytes && step.consumed < input.size()) {
      const auto outcome = parser_.parse(input.substr(step.consumed), limits());
      if (outcome == RespRequestParser::Outcome::kNeedMore) break;
      if (outcome == RespRequestParser::Outcome::kError) {
        // The stream can no longer be framed: answer, then close, as Redis does.
        reply.error("ERR " + parser_.error());
        step.close = true;
        return step;
      }
      step.consumed += parser_.consumed();
      const auto& arguments = parser_.arguments();
      if (arguments.empty()) continue;  // an empty command is ignored
      if (!run(arguments, reply)) {
        step.close = true;
        return step;
      }
      reply.set_resp3(resp3_);
    }
    return step;
  }

 private:
  RespLimits limits() const {
    RespLimits l;
    l.max_bulk_bytes = options_.max_bulk_bytes;
    l.max_arguments = options_.max_arguments;
    l.max_inline_bytes =
        std::min<std::size_t>(kMaxInlineBytes, options_.listener.max_pending_bytes);
    if (token_required_ && !authenticated_) {
      l.max_bulk_bytes = std::min(l.max_bulk_bytes, kUnauthenticatedBulkBytes);
      l.max_arguments = std::min(l.max_arguments, kUnauthenticatedArguments);
    }
    return l;
  }

  using Arguments = std::vector<std::string_view>;

  // Answers one command, or queues it inside MULTI; false to close the
  // connection after the answer.
  bool run(const Arguments& args, RespReply& reply) {
    const RespCommand* row = find_resp_command(args[0]);
    const RespCommandId command = row != nullptr ? row->id : kOther;
    metrics_->count_command(command);
    if (token_required_ && !authenticated_ && command != kAuth && command != kHello &&
        command != kQuit) {
      return refuse_command("NOAUTH Authentication required.", reply);
    }
    // A wrong number of arguments is answered and the connection goes on,
    // as for every command: only QUIT and framing errors close it.
    if (std::string refusal = check(row, args); !refusal.empty()) {
      return refuse_command(refusal, reply);
    }
    if (transaction_ && row->in_transaction == InTransaction::kQueued) {
      queue(*row, args, reply);
      return true;
    }
    return execute(*row, args, reply);
  }

  // Refuses a command; inside MULTI, that aborts the transaction.
  bool refuse_command(std::string_view error, RespReply& reply) {
    reply.error(error);
    if (transaction_) transaction_->abort();
    return true;
  }

  // Why the command must be refused before it runs or is queued; "" if not.
  std::string check(const RespCommand* row, const Arguments& args) const {
    if (row == nullptr) {
      if (auto reason = unserved_command_reason(args[0])) {
        return fmt::format("ERR {} is not served by snowid: {}", printable(args[0]), *reason);
      }
      return fmt::format(
          "ERR unknown command '{}', with args beginning with: {}; snowid serves INCR, INCRBY, "
          "SNOWID.ID, SNOWID.IDS, SNOWID.DECODE, SNOWID.INFO, SNOWID.BUSINESS (COMMAND lists them "
          "all)",
          printable(args[0]), args.size() > 1 ? printable(args[1]) : "");
    }
    if (args.size() < row->min_arguments || args.size() > row->max_arguments) {
      return fmt::format("ERR wrong number of arguments for '{}' command", printable(args[0]));
    }
    if (transaction_ && row->in_transaction == InTransaction::kRefused) {
      return fmt::format("ERR {} is not allowed inside MULTI", printable(args[0]));
    }
    return {};
  }

  // Queues a command after MULTI once it passes what it would be refused for
  // without taking a number, so that EXEC runs only commands that can run.
  void queue(const RespCommand& row, const Arguments& args, RespReply& reply) {
    std::uint64_t ids = 1;
    std::string refusal = admission(row, args, ids);
    if (refusal.empty()) refusal = transaction_->queue(args, ids);
    if (!refusal.empty()) {
      refuse_command(refusal, reply);
      return;
    }
    reply.status("QUEUED");
  }

  // For a command that hands out IDs or numbers: the service's refusal of
  // its request, or ""; `ids` how many it hands out.
  std::string admission(const RespCommand& row, const Arguments& args, std::uint64_t& ids) {
    std::string refusal;
    Answer answer;
    if (row.id == kIncr || row.id == kIncrBy) {
      std::int64_t count = 1;
      if (row.id == kIncrBy && !incrby_increment(args[2], count, refusal)) return refusal;
      answer = service_.admit(segment_request(args[1], count));
      if (!answer.ok()) return increment_refusal(answer, count);
    } else if (row.id == kSnowidId || row.id == kSnowidIds) {
      std::int64_t count = 1;
      if (row.id == kSnowidIds && !snowid_ids_count(args[1], count, refusal)) return refusal;
      ids = static_cast<std::uint64_t>(count);
      answer = service_.admit(IdRequest{caller(), agent_, ids});
    } else if (row.id == kSnowidBusiness) {
      std::int64_t count = 1;
      if (args.size() == 3 && !snowid_ids_count(args[2], count, refusal)) return refusal;
      ids = static_cast<std::uint64_t>(count);
      answer = service_.admit(BusinessRequest{caller(), agent_, args[1], ids});
    }
    return answer.ok() ? std::string{} : refusal_text(answer);
  }

  // Runs a command that passed check().
  bool execute(const RespCommand& row, const Arguments& args, RespReply& reply) {
    switch (row.id) {
      case kIncr:
        incr(args[1], 1, reply);
        return true;
      case kIncrBy:
        incrby(args, reply);
        return true;
      case kSnowidId:
        next_ids(1, false, reply);
        return true;
      case kSnowidIds:
        snowid_ids(args[1], reply);
        return true;
      case kSnowidDecode:
        decode(args[1], reply);
        return true;
      case kSnowidInfo:
        info(reply);
        return true;
      case kSnowidBusiness:
        business(args, reply);
        return true;
      case kExists:
      case kType:
      case kTtl:
      case kPttl:
        tag_facts(row.id, args, reply);
        return true;
      case kMulti:
      case kExec:
      case kDiscard:
      case kUnwatch:
        transaction_command(row.id, reply);
        return true;
      default:
        return connection_command(row.id, args, reply);
    }
  }

  // MULTI, EXEC, DISCARD, UNWATCH (nothing is ever watched).
  void transaction_command(RespCommandId command, RespReply& reply) {
    if (command == kUnwatch) return reply.status("OK");
    if (command == kMulti) {
      transaction_.emplace(
          RespTransactionLimits{options_.listener.max_pending_bytes, options_.max_queued_commands},
          shared_->queues);
      return reply.status("OK");
    }
    if (!transaction_) {
      return reply.error(
          fmt::format("ERR {} without MULTI", command == kExec ? "EXEC" : "DISCARD"));
    }
    std::optional<RespTransaction> transaction = std::move(transaction_);
    transaction_.reset();
    if (command == kDiscard) return reply.status("OK");
    if (transaction->aborted()) {
      return reply.error("EXECABORT Transaction discarded because of previous errors.");
    }
    reply.array(transaction->size());
    for (std::size_t i = 0; i < transaction->size(); ++i) {
      const Arguments args = transaction->command(i);
      execute(*find_resp_command(args[0]), args, reply);
    }
  }

  // EXISTS tag… (how many of them this node serves), TYPE tag ("string" or
  // "none"), TTL and PTTL tag (-1: no expiry, -2: not served here).
  void tag_facts(RespCommandId command, const Arguments& args, RespReply& reply) {
    std::int64_t served = 0;
    for (std::size_t i = 1; i < args.size(); ++i) {
      bool this_one = false;
      const Answer answer = service_.segment_tag_served(caller(), args[i], this_one);
      if (!answer.ok()) return refuse(answer, reply);
      served += this_one ? 1 : 0;
    }
    if (command == kExists) return reply.integer(served);
    if (command == kType) return reply.status(served > 0 ? "string" : "none");
    reply.integer(served > 0 ? -1 : -2);
  }

  // The commands of the connection itself.
  bool connection_command(RespCommandId command, const Arguments& args, RespReply& reply) {
    switch (command) {
      case kPing:
        args.size() == 2 ? reply.bulk(args[1]) : reply.status("PONG");
        return true;
      case kEcho:
        reply.bulk(args[1]);
        return true;
      case kHello:
        hello(args, reply);
        return true;
      case kAuth:
        args.size() == 2 ? auth("default", args[1], reply) : auth(args[1], args[2], reply);
        return true;
      case kClient:
        client(args, reply);
        return true;
      case kSelect:
        args[1] == "0" ? reply.status("OK") : reply.error("ERR DB index is out of range");
        return true;
      case kQuit:
        reply.status("OK");
        return false;
      case kCommandCommand:
        answer_command_docs(args, reply);
        return true;
      case kInfo:
        server_info(reply);
        return true;
      default:
        // CONFIG GET, which clients and redis-benchmark send at connect:
        // no Redis parameter is kept here, so every pattern matches none.
        same_name(args[1], "GET") && args.size() == 3
            ? reply.map(0)
            : reply.error("ERR CONFIG: only CONFIG GET is served, and it matches nothing");
        return true;
    }
  }

  // How RESP's callers are authenticated: a connection holds the proof of
  // the token it passed AUTH (or HELLO's) with, checked at each command
  // against the tokens in force then; one from resp_trusted_networks is
  // trusted from the start.
  Caller caller() const {
    if (!authenticated_) return Caller::presenting({});
    return proof_ ? Caller::proven(*proof_) : Caller::trusted();
  }

  // The Answer's refusal as a RESP error: the outcome's word, then the reason.
  // A token that does not open the call (another tag's, or one no longer in
  // force) is answered as a connection that never authenticated.
  static std::string refusal_text(const Answer& answer) {
    if (answer.outcome == Outcome::kUnauthenticated) return "NOAUTH Authentication required.";
    std::string_view code = "ERR";
    if (answer.outcome == Outcome::kUnavailable) code = "UNAVAILABLE";
    return fmt::format("{} {}", code, answer.message);
  }
  static void refuse(const Answer& answer, RespReply& reply) { reply.error(refusal_text(answer)); }
  // INCR and INCRBY's refusal: a count above max_batch (the service's
  // kTooLarge) in Redis's manner, naming the increment; any other as above.
  std::string increment_refusal(const Answer& answer, std::int64_t count) const {
    if (answer.outcome != Outcome::kTooLarge) return refusal_text(answer);
    return fmt::format("ERR increment {} exceeds max_batch {}", count, service_.config().max_batch);
  }

  // Runs `issue` (returning an Answer) and counts it as a call of the service.
  template <typename Issue>
  Answer counted(Call call, Issue&& issue) {
    return service_.timed(Protocol::kResp, call, std::forward<Issue>(issue));
  }

  // INCRBY's request: `count` consecutive numbers of the tag.
  SegmentRequest segment_request(std::string_view tag, std::int64_t count) const {
    SegmentRequest request{caller(), agent_, tag, std::nullopt};
    if (count > 1) request.count = static_cast<std::uint64_t>(count);
    request.consecutive = true;
    return request;
  }

  // `count` consecutive numbers of the tag; their last as an integer.
  void incr(std::string_view tag, std::int64_t count, RespReply& reply) {
    numbers_.clear();
    const SegmentRequest request = segment_request(tag, count);
    Answer answer = counted(Call::kSegment, [&] {
      // Numbers from one request may span two ranges; INCRBY's caller takes
      // the n numbers up to the one returned as its own, so they must be
      // consecutive. A batch that is not is given up (its numbers are
      // skipped, never reissued) and taken again, from the new range.
      // A store whose ranges are not dense refuses n > 1 before taking any.
      for (int attempt = 0; attempt < 3; ++attempt) {
        numbers_.clear();
        Answer a = service_.next_segment_ids(request, numbers_);
        if (!a.ok() || numbers_.back() - numbers_.front() == count - 1) return a;
      }
      return Answer{Outcome::kInvalidArgument,
                    fmt::format("cannot reserve {} consecutive numbers of tag {}: ask for fewer "
                                "than the tag's step",
                                count, printable(tag))};
    });
    if (!answer.ok()) return reply.error(increment_refusal(answer, count));
    reply.integer(numbers_.back());
  }

  void incrby(const Arguments& args, RespReply& reply) {
    std::int64_t count = 1;
    std::string refusal;
    if (!incrby_increment(args[2], count, refusal)) return reply.error(refusal);
    incr(args[1], count, reply);
  }

  void snowid_ids(std::string_view count_text, RespReply& reply) {
    std::int64_t count = 0;
    std::string refusal;
    if (!snowid_ids_count(count_text, count, refusal)) return reply.error(refusal);
    next_ids(static_cast<std::uint64_t>(count), true, reply);
  }

  // IDs as bulk strings of their decimal digits, never RESP integers: a
  // client that reads integers into doubles (ioredis, node-redis) would
  // round a 64-bit ID, and two IDs could arrive as one.
  void next_ids(std::uint64_t count, bool as_array, RespReply& reply) {
    IdRequest request{caller(), agent_, count};
    if (!as_array) {
      Id id = 0;
      const Answer answer = counted(Call::kNextId, [&] { return service_.next_id(request, id); });
      if (!answer.ok()) return refuse(answer, reply);
      return reply.decimal(id);
    }
    ids_.clear();
    const Answer answer = counted(Call::kNextIds, [&] { return service_.next_ids(request, ids_); });
    if (!answer.ok()) return refuse(answer, reply);
    reply.array(ids_.size());
    for (Id id : ids_) reply.decimal(id);
  }

  // SNOWID.BUSINESS tag [count]: the tag's business IDs as an array of bulk
  // strings, one by default.
  void business(const Arguments& args, RespReply& reply) {
    std::int64_t count = 1;
    std::string refusal;
    if (args.size() == 3 && !snowid_ids_count(args[2], count, refusal)) {
      return reply.error(refusal);
    }
    const BusinessRequest request{caller(), agent_, args[1], static_cast<std::uint64_t>(count)};
    strings_.clear();
    const Answer answer =
        counted(Call::kBusiness, [&] { return service_.next_business_ids(request, strings_); });
    if (!answer.ok()) return refuse(answer, reply);
    reply.array(strings_.size());
    for (const std::string& id : strings_) reply.bulk(id);
  }

  void decode(std::string_view text, RespReply& reply) {
    IdFields fields;
    const Answer answer = counted(Call::kDecode, [&] {
      auto id = parse_id(text);
      if (!id.ok()) return Answer{Outcome::kInvalidArgument, id.error().message};
      return service_.decode(caller(), static_cast<std::uint64_t>(*id), fields);
    });
    if (!answer.ok()) return refuse(answer, reply);
    reply.map(5);
    reply.bulk("timestamp_ms");
    reply.integer(fields.timestamp.count());
    reply.bulk("time");
    reply.bulk(format_time(fields.timestamp));
    reply.bulk("datacenter_id");
    reply.integer(static_cast<std::int64_t>(fields.datacenter));
    reply.bulk("worker_id");
    reply.integer(static_cast<std::int64_t>(fields.worker));
    reply.bulk("sequence");
    reply.integer(static_cast<std::int64_t>(fields.sequence));
  }

  void info(RespReply& reply) {
    NodeInfo node;
    const Answer answer = counted(Call::kInfo, [&] { return service_.info(caller(), node); });
    if (!answer.ok()) return refuse(answer, reply);
    reply.bulk(info_json_text(node));
  }

  // AUTH [user] password: the user, if given, must be "default".
  void auth(std::string_view user, std::string_view password, RespReply& reply) {
    if (!token_required_) {
      return reply.error(
          "ERR AUTH <password> called without any password configured for the default user. "
          "Are you sure your configuration is correct?");
    }
    if (!check_password(user, password)) {
      return reply.error("WRONGPASS invalid username-password pair or user is disabled.");
    }
    reply.status("OK");
  }

  // Whether the password is a token in force and the user "default" or the
  // token's name; if so, the connection is authenticated from now on, as
  // far as that token opens (access_tokens.h).
  bool check_password(std::string_view user, std::string_view password) {
    std::optional<TokenProof> proof = service_.prove_token(password);
    if (!proof || (user != "default" && user != proof->name)) return false;
    proof_ = std::move(proof);
    authenticated_ = true;
    return true;
  }

  // HELLO [protover [AUTH user password] [SETNAME name]]: every option is
  // checked before any takes effect, so a refused HELLO changes nothing.
  void hello(const Arguments& args, RespReply& reply) {
    std::optional<std::int64_t> version;
    if (args.size() >= 2) {
      version = integer_argument(args[1]);
      if (!version) return reply.error("ERR Protocol version is not an integer or out of range");
      if (*version != 2 && *version != 3)
        return reply.error("NOPROTO unsupported protocol version");
    }
    std::optional<std::pair<std::string_view, std::string_view>> credentials;
    std::optional<std::string_view> name;
    for (std::size_t i = 2; i < args.size(); ++i) {
      if (same_name(args[i], "AUTH") && i + 2 < args.size()) {
        credentials.emplace(args[i + 1], args[i + 2]);
        i += 2;
      } else if (same_name(args[i], "SETNAME") && i + 1 < args.size()) {
        name = args[++i];
      } else {
        return reply.error(
            fmt::format("ERR Syntax error in HELLO option '{}'", printable(args[i])));
      }
    }
    if (name && !name->empty() && !valid_agent(*name)) {
      return reply.error(
          "ERR client name must match [a-zA-Z][a-zA-Z0-9-]* and be at most 64 characters");
    }
    // Without a token any password is the default user's, as in Redis.
    if (credentials && token_required_ &&
        !check_password(credentials->first, credentials->second)) {
      return reply.error("WRONGPASS invalid username-password pair or user is disabled.");
    }
    if (token_required_ && !authenticated_) {
      return reply.error(
          "NOAUTH HELLO must be called with the client already authenticated, otherwise the "
          "HELLO <proto> AUTH <user> <pass> option can be used to authenticate the client and "
          "select the RESP protocol version at the same time");
    }
    if (name && !set_name(*name, reply)) return;
    if (version) resp3_ = *version == 3;
    reply.set_resp3(resp3_);
    reply.map(7);
    reply.bulk("server");
    reply.bulk("snowid");
    reply.bulk("version");
    reply.bulk(kRedisProtocolVersion);
    reply.bulk("proto");
    reply.integer(resp3_ ? 3 : 2);
    reply.bulk("id");
    reply.integer(client_id_);
    reply.bulk("mode");
    reply.bulk("standalone");
    reply.bulk("role");
    reply.bulk("master");
    reply.bulk("modules");
    reply.array(0);
  }

  // The connection's agent, by HTTP's rule (an empty name clears it).
  bool set_name(std::string_view name, RespReply& reply) {
    if (!name.empty() && !valid_agent(name)) {
      reply.error("ERR client name must match [a-zA-Z][a-zA-Z0-9-]* and be at most 64 characters");
      return false;
    }
    agent_ = std::string(name);
    return true;
  }

  void client(const Arguments& args, RespReply& reply) {
    const std::string_view sub = args[1];
    if (same_name(sub, "SETNAME") && args.size() == 3) {
      if (set_name(args[2], reply)) reply.status("OK");
    } else if (same_name(sub, "GETNAME") && args.size() == 2) {
      agent_.empty() ? reply.null() : reply.bulk(agent_);
    } else if (same_name(sub, "ID") && args.size() == 2) {
      reply.integer(client_id_);
    } else if (same_name(sub, "SETINFO") && args.size() == 4) {
      reply.status("OK");  // lib-name / lib-ver: accepted, not kept
    } else if ((same_name(sub, "NO-EVICT") || same_name(sub, "NO-TOUCH")) && args.size() == 3) {
      reply.status("OK");  // nothing here is evicted or touched
    } else if (same_name(sub, "INFO") && args.size() == 2) {
      reply.bulk(fmt::format("id={} name={} resp={}\n", client_id_, agent_, resp3_ ? 3 : 2));
    } else {
      reply.error(fmt::format("ERR unknown subcommand or wrong number of arguments for '{}'",
                              printable(sub)));
    }
  }

  // INFO [section]: the server section, whatever was asked.
  void server_info(RespReply& reply) {
    NodeInfo node;
    const bool known = service_.info(caller(), node).ok();
    reply.bulk(fmt::format(
        "# Server\r\nredis_version:{}\r\nsnowid_version:{}\r\nredis_mode:standalone\r\n"
        "process_id:{}\r\nuptime_in_seconds:{}\r\nids_issued:{}\r\n",
        kRedisProtocolVersion, kVersion, ::getpid(),
        known ? static_cast<std::int64_t>(node.uptime.count()) : 0, known ? node.ids_issued : 0));
  }

  std::shared_ptr<RespShared> shared_;
  std::shared_ptr<StreamMetrics> metrics_;
  IdService& service_;
  const RespOptions& options_;
  const bool token_required_;
  const std::int64_t client_id_;
  RespRequestParser parser_;
  bool resp3_ = false;
  bool authenticated_ = false;
  // The token AUTH presented; nullopt while none (or trusted).
  std::optional<TokenProof> proof_;
  std::string agent_;  // CLIENT SETNAME's name; empty: none
  std::vector<Id> ids_;
  std::vector<std::int64_t> numbers_;
  std::vector<std::string> strings_;  // SNOWID.BUSINESS's
  std::optional<RespTransaction> transaction_;  // after MULTI, until EXEC or DISCARD
};

}  // namespace

std::unique_ptr<Listener> make_resp_listener(boost::asio::io_context& acceptor_io,
                                             IdService& service, const RespOptions& options) {
  auto metrics = std::make_shared<StreamMetrics>("resp", resp_command_names());
  auto shared = std::make_shared<RespShared>(service, options);
  service.add_metrics_source(shared);
  return std::make_unique<StreamServer>(
      acceptor_io, service, "resp", options.listener, metrics,
      [shared, metrics](bool trusted) {
        return std::make_unique<RespConnection>(shared, metrics, trusted);
      },
      "-ERR max number of clients reached\r\n", resp_first_command_authenticates);
}

}  // namespace snowid::server
