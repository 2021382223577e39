#include "service.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <limits>
#include <span>

#include "audit_format.h"
#include "segment_metrics.h"

namespace snowid::server {

bool valid_agent(std::string_view agent) {
  constexpr std::size_t kMaxAgentLength = 64;
  if (agent.empty() || agent.size() > kMaxAgentLength) return false;
  auto alpha = [](char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); };
  if (!alpha(agent[0])) return false;
  for (char c : agent) {
    if (!alpha(c) && !(c >= '0' && c <= '9') && c != '-') return false;
  }
  return true;
}

Answer IdService::check_agent(std::string_view agent) const {
  if (agent.empty() || valid_agent(agent)) return {};
  return {Outcome::kInvalidArgument,
          "agent must match [a-zA-Z][a-zA-Z0-9-]* and be at most 64 characters"};
}

Answer IdService::check_count(std::uint64_t count) const {
  const std::uint32_t max = config_.max_batch;
  if (count >= 1 && count <= max) return {};
  // One rule for every protocol and every size: 0 is no batch at all;
  // anything above max_batch (2^32+5 as much as max_batch+1) is a batch this
  // node does not hand out, which a client answers by asking for less.
  return {count == 0 ? Outcome::kInvalidArgument : Outcome::kTooLarge,
          fmt::format("count {} is out of range 1..{}", count, max)};
}

Answer IdService::admit(const IdRequest& request) const {
  if (Answer allowed = authorize(request.caller, TokenScope::snowflake()); !allowed.ok())
    return allowed;
  if (Answer count = check_count(request.count); !count.ok()) return count;
  return check_agent(request.agent);
}

Answer IdService::next_ids(const IdRequest& request, std::vector<Id>& out) {
  if (Answer admitted = admit(request); !admitted.ok()) return admitted;
  if (Status claim = node_->may_issue(); !claim.ok()) return generator_refusal(claim.error());
  const auto count = static_cast<std::uint32_t>(request.count);  // <= max_batch
  Generator& generator = node_->generator();
  thread_local std::string records;
  records.clear();
  std::uint64_t blocks = 0;
  std::uint32_t done = 0;
  Status result;
  while (done < count) {
    auto block = generator.next_block(count - done);
    if (!block.ok()) {
      result = block.error();
      break;
    }
    for (std::uint32_t i = 0; i < block->count; ++i) out.push_back(block->at(i));
    done += block->count;
    if (audit_log_) {
      const GeneratorOptions& node = generator.options();
      audit::append_record(records, {audit_log_->incarnation(), node.datacenter_id,
                                     node.worker_id, block->first, block->last()});
      ++blocks;
    }
  }
  if (done > 0) metrics_.count_ids(request.agent, done);
  // A refused request sends no ID, so its blocks need no record.
  if (result.ok() && audit_log_) result = audit_log_->append(records, blocks);
  if (!result.ok()) return generator_refusal(result.error());
  return {};
}

Answer IdService::next_id(const IdRequest& request, Id& out) {
  if (Answer allowed = authorize(request.caller, TokenScope::snowflake()); !allowed.ok())
    return allowed;
  if (Answer agent = check_agent(request.agent); !agent.ok()) return agent;
  if (Status claim = node_->may_issue(); !claim.ok()) return generator_refusal(claim.error());
  Generator& generator = node_->generator();
  Result<Id> id = generator.next();
  if (!id.ok()) return generator_refusal(id.error());
  metrics_.count_ids(request.agent, 1);
  if (audit_log_) {
    thread_local std::string record;
    record.clear();
    const GeneratorOptions& node = generator.options();
    audit::append_record(record,
                         {audit_log_->incarnation(), node.datacenter_id, node.worker_id, *id, *id});
    if (Status logged = audit_log_->append(record, 1); !logged.ok()) {
      return generator_refusal(logged.error());
    }
  }
  out = *id;
  return {};
}

Result<FormattedIdSource*> IdService::formatted_id_source() {
  Generator& generator = node_->generator();
  FormattedIdSource* current = formatted_ids_.load(std::memory_order_acquire);
  if (current != nullptr && &current->generator() == &generator) return current;
  std::lock_guard lock(formatted_ids_mutex_);
  for (const auto& source : formatted_id_sources_) {
    if (&source->generator() == &generator) {
      formatted_ids_.store(source.get(), std::memory_order_release);
      return source.get();
    }
  }
  auto created = FormattedIdSource::create(generator);
  if (!created.ok()) return created.error();
  formatted_id_sources_.push_back(std::move(*created));
  formatted_ids_.store(formatted_id_sources_.back().get(), std::memory_order_release);
  return formatted_id_sources_.back().get();
}

Answer IdService::next_formatted_ids(const IdRequest& request, IdKind kind,
                                     std::vector<FormattedId>& out) {
  if (Answer admitted = admit(request); !admitted.ok()) return admitted;
  if (Status claim = node_->may_issue(); !claim.ok()) return generator_refusal(claim.error());
  auto source = formatted_id_source();
  if (!source.ok()) return {Outcome::kDisabled, source.error().message};
  const std::size_t first = out.size();
  out.resize(first + request.count);
  Status issued = (*source)->next(kind, std::span(out).subspan(first));
  if (!issued.ok()) {
    out.resize(first);
    if (issued.error().code == ErrorCode::kInvalidArgument) {
      return {Outcome::kDisabled, issued.error().message};  // the layout does not fit the format
    }
    return generator_refusal(issued.error());
  }
  metrics_.count_ids(request.agent, request.count);
  return {};
}

Answer IdService::check_opaque_ids() const {
  if (opaque_ids_ == nullptr) {
    return {Outcome::kDisabled,
            "opaque IDs are off: set opaque_key_file to a file holding the key"};
  }
  return {};
}

Answer IdService::admit_opaque(const IdRequest& request) const {
  if (Answer admitted = admit(request); !admitted.ok()) return admitted;
  return check_opaque_ids();
}

Answer IdService::next_opaque_ids(const IdRequest& request, std::vector<Id>& out) {
  // Admitted once (next_ids() admits), so that the call counts once per token.
  if (Answer on = check_opaque_ids(); !on.ok()) {
    if (Answer admitted = admit(request); !admitted.ok()) return admitted;
    return on;
  }
  const std::size_t first = out.size();
  if (Answer answer = next_ids(request, out); !answer.ok()) {
    out.resize(first);
    return answer;
  }
  // Issued IDs are non-negative; int64 and uint64 may alias, so the
  // permutation maps them in place.
  static_assert(sizeof(Id) == sizeof(std::uint64_t));
  Status mapped = opaque_ids_->permute(
      std::span(reinterpret_cast<std::uint64_t*>(out.data() + first), out.size() - first));
  if (!mapped.ok()) {
    out.resize(first);  // never send a Snowflake ID where an opaque one was asked for
    return {Outcome::kInternal, mapped.error().message};
  }
  return {};
}

Answer IdService::to_opaque(const Caller& caller, std::string_view id_text, Id& out) const {
  if (Answer allowed = authorize(caller, TokenScope::snowflake()); !allowed.ok()) return allowed;
  if (Answer on = check_opaque_ids(); !on.ok()) return on;
  auto id = parse_id(id_text);
  if (!id.ok()) return {Outcome::kInvalidArgument, id.error().message};
  auto opaque = opaque_ids_->to_opaque(*id);
  if (!opaque.ok()) return {Outcome::kInternal, opaque.error().message};
  out = *opaque;
  return {};
}

Answer IdService::from_opaque(const Caller& caller, std::string_view opaque_text,
                              IdEncoding encoding, Id& out) const {
  if (Answer allowed = authorize(caller, TokenScope::snowflake()); !allowed.ok()) return allowed;
  if (Answer on = check_opaque_ids(); !on.ok()) return on;
  auto opaque = decode_id(opaque_text, encoding);
  if (!opaque.ok()) return {Outcome::kInvalidArgument, opaque.error().message};
  auto id = opaque_ids_->from_opaque(*opaque);
  if (!id.ok()) return {Outcome::kInternal, id.error().message};
  out = *id;
  return {};
}

Answer IdService::admit(const SegmentRequest& request) const {
  const TokenScope scope = TokenScope::segment_tag(request.tag);
  if (Answer allowed = authorize(request.caller, scope); !allowed.ok()) return allowed;
  if (Answer agent = check_agent(request.agent); !agent.ok()) return agent;
  if (Answer on = check_segment_mode(); !on.ok()) return on;
  if (Answer tag = check_tag(request.tag); !tag.ok()) return tag;
  if (!request.count) return {};
  if (Answer count = check_count(*request.count); !count.ok()) return count;
  if (request.consecutive && *request.count > 1 && !segments_->dense_ranges()) {
    return {Outcome::kInvalidArgument,
            fmt::format("{} consecutive numbers cannot be served: the segment store is a "
                        "ticket-server set, whose numbers step by its increment (take them "
                        "one at a time: INCR, pipelined if need be)",
                        *request.count)};
  }
  return {};
}

Answer IdService::segment_tag_served(const Caller& caller, std::string_view tag, bool& out) const {
  if (Answer allowed = authorize(caller, TokenScope::segment_tag(tag)); !allowed.ok()) {
    return allowed;
  }
  if (Answer on = check_segment_mode(); !on.ok()) return on;
  if (Answer valid = check_tag(tag); !valid.ok()) return valid;
  out = segments_->serves(tag);
  return {};
}

Answer IdService::check_tag(std::string_view tag) const {
  if (Status valid = validate_segment_tag(tag); !valid.ok()) {
    return {Outcome::kInvalidArgument, valid.error().message};
  }
  return {};
}

Answer IdService::check_segment_mode() const {
  if (segments_ == nullptr) {
    return {Outcome::kDisabled, "segment mode is off (segment_store = \"off\")"};
  }
  return {};
}

Answer IdService::segment_buffers(const Caller& caller, SegmentBuffersSnapshot& out) const {
  if (Answer allowed = authorize(caller, TokenScope::admin()); !allowed.ok()) return allowed;
  if (Answer on = check_segment_mode(); !on.ok()) return on;
  out = segments_->buffers(kMaxSegmentTagsExported);
  return {};
}

Answer IdService::segment_store_rows(const Caller& caller, SegmentStoreRows& out) {
  if (Answer allowed = authorize(caller, TokenScope::admin()); !allowed.ok()) return allowed;
  if (Answer on = check_segment_mode(); !on.ok()) return on;
  // One row more than shown tells whether the store holds more.
  auto rows = segments_->store_rows(kMaxSegmentTagsExported + 1);
  if (!rows.ok()) return {Outcome::kUnavailable, rows.error().message};
  out.truncated = rows->size() > kMaxSegmentTagsExported;
  if (out.truncated) rows->resize(kMaxSegmentTagsExported);
  out.rows = std::move(*rows);
  return {};
}

Answer IdService::next_segment_ids(const SegmentRequest& request, std::vector<std::int64_t>& out) {
  if (Answer admitted = admit(request); !admitted.ok()) return admitted;
  if (tag_book_ != nullptr) {
    if (Status plain = tag_book_->check_plain(request.tag); !plain.ok()) {
      return {Outcome::kConflict, plain.error().message};
    }
  }
  if (!request.count) {
    auto number = segments_->next(request.tag);
    if (!number.ok()) return segment_refusal(request.tag, number.error());
    out.push_back(*number);
    return {};
  }
  const std::size_t before = out.size();
  Status issued = segments_->next(request.tag, static_cast<std::uint32_t>(*request.count), out);
  if (!issued.ok()) return segment_refusal(request.tag, issued.error());
  if (!segments_->dense_ranges()) {
    std::sort(out.begin() + static_cast<std::ptrdiff_t>(before), out.end());
  }
  return {};
}

Answer IdService::decode(const Caller& caller, std::uint64_t id, IdFields& out) const {
  if (Answer allowed = authorize(caller); !allowed.ok()) return allowed;
  if (id > static_cast<std::uint64_t>(std::numeric_limits<Id>::max())) {
    return {Outcome::kInvalidArgument, fmt::format("ID {} exceeds 2^63-1", id)};
  }
  auto fields = snowid::decode(layout(), static_cast<Id>(id));
  if (!fields.ok()) return {Outcome::kInvalidArgument, fields.error().message};
  out = *fields;
  return {};
}

Answer IdService::decode(const Caller& caller, std::string_view text, DecodedId& out) const {
  if (Answer allowed = authorize(caller); !allowed.ok()) return allowed;
  auto decoded = decode_text(text, layout());
  if (!decoded.ok()) return {Outcome::kInvalidArgument, decoded.error().message};
  out = std::move(*decoded);
  return {};
}

IdService::IdService(ServiceConfig config, Parts parts)
    : config_(std::move(config)),
      tokens_(parts.tokens ? std::move(parts.tokens)
              : config_.bearer_token.empty()
                  ? std::make_unique<TokenSource>()
                  : std::make_unique<TokenSource>(config_.bearer_token)),
      node_(std::move(parts.node)),
      segments_(std::move(parts.segments)),
      tag_book_(std::move(parts.tag_book)),
      tag_book_missing_(std::move(parts.tag_book_missing)),
      audit_log_(std::move(parts.audit_log)),
      opaque_ids_(std::move(parts.opaque_ids)),
      bound_endpoints_(std::move(parts.listeners)) {}

void IdService::set_bound_endpoint(std::string_view protocol, const Endpoint& endpoint) {
  std::lock_guard lock(listeners_mutex_);
  for (auto& [name, address] : bound_endpoints_) {
    if (name == protocol) {
      address = endpoint.text();
      return;
    }
  }
  bound_endpoints_.emplace_back(std::string(protocol), endpoint.text());
}

Answer IdService::authorize(const Caller& caller, const TokenScope& scope,
                            std::string* who) const {
  if (!tokens_->required() || caller.is_trusted()) {
    if (who != nullptr) *who = caller.is_trusted() ? "trusted network" : "no token required";
    return {};
  }
  const std::shared_ptr<const TokenSet> tokens = tokens_->current();
  const AccessToken* token = caller.proof() != nullptr ? tokens->match(*caller.proof())
                                                       : tokens->match(caller.authorization());
  const bool allowed = token != nullptr && token->allows(scope);
  if (!allowed || scope.kind != TokenScope::Kind::kNode) {
    token_calls_.count(token != nullptr ? std::string_view(token->name) : "#none",
                       token_metrics_tag(scope, *tokens), allowed);
  }
  if (allowed) {
    if (who != nullptr) *who = token->name;
    return {};
  }
  return {Outcome::kUnauthenticated, "a valid bearer token is required"};
}

std::string_view IdService::token_metrics_tag(const TokenScope& scope,
                                              const TokenSet& tokens) const {
  switch (scope.kind) {
    case TokenScope::Kind::kNode:
      return "#node";
    case TokenScope::Kind::kSnowflake:
      return "#snowflake";
    case TokenScope::Kind::kAdmin:
      return "#admin";
    case TokenScope::Kind::kTag:
      break;
  }
  if (tokens.names_tag(scope.tag)) return scope.tag;
  if (segments_ != nullptr && validate_segment_tag(scope.tag).ok() &&
      segments_->serves(scope.tag)) {
    return scope.tag;
  }
  return "#other";
}

std::optional<TokenProof> IdService::prove_token(std::string_view token) const {
  if (!tokens_->required()) return std::nullopt;
  const std::string presented = fmt::format("Bearer {}", token);
  const AccessToken* found = tokens_->current()->match(presented);
  if (found == nullptr) {
    token_calls_.count("#none", "#node", false);
    return std::nullopt;
  }
  return TokenProof{found->name, found->digest};
}

Status IdService::readiness() const {
  if (Status node = node_->readiness(); !node.ok()) return node;
  if (audit_log_) return audit_log_->health();
  return {};
}

void IdService::maintain() {
  node_->maintain();
  if (audit_log_) audit_log_->probe();
  // The tokens file's inode, size and time, once a second.
  const auto now = std::chrono::steady_clock::now();
  if (now - tokens_checked_ >= std::chrono::seconds{1}) {
    tokens_checked_ = now;
    tokens_->reload();
  }
}

Answer IdService::segment_refusal(std::string_view tag, const Error& error) const {
  switch (error.code) {
    case ErrorCode::kInvalidArgument:
      return {Outcome::kInvalidArgument, error.message};
    case ErrorCode::kNotFound:
      return {Outcome::kNotFound, error.message};
    case ErrorCode::kUnavailable:
      break;
    default:
      return {Outcome::kInternal, error.message};
  }
  static std::atomic<long long> last_logged_s{0};
  const long long now_s = std::chrono::duration_cast<std::chrono::seconds>(
                              std::chrono::steady_clock::now().time_since_epoch())
                              .count();
  long long last = last_logged_s.load();
  if (now_s - last >= 10 && last_logged_s.compare_exchange_strong(last, now_s)) {
    spdlog::warn("segment requests refused: {}", error.message);
  }
  return {Outcome::kUnavailable,
          fmt::format("segment tag '{}' has no numbers buffered and the segment store is "
                      "unavailable; retry later (details in the server log)",
                      tag.substr(0, 64))};
}

std::optional<SegmentReadiness> IdService::segment_readiness() const {
  if (segments_ == nullptr) return std::nullopt;
  SegmentReadiness readiness = segments_->readiness();
  // /readyz needs no token: the store's own text stays in /v1/info and the log.
  readiness.reason.clear();
  if (!readiness.store_reachable) {
    readiness.reason = readiness.ready ? "segment store unreachable; serving from buffered ranges"
                                       : "segment store unreachable; no numbers buffered";
  }
  // Refused tags and stores are named: their messages hold no secret
  // (range_memory.h's store names, ticket servers by place).
  std::vector<std::string> refusals = readiness.refused_tags;
  refusals.insert(refusals.end(), readiness.refused_stores.begin(), readiness.refused_stores.end());
  if (!readiness.reason.empty()) refusals.push_back(readiness.reason);
  readiness.reason = fmt::format("{}", fmt::join(refusals, "; "));
  return readiness;
}

Answer IdService::info(const Caller& caller, NodeInfo& out) const {
  if (Answer allowed = authorize(caller); !allowed.ok()) return allowed;
  const Generator& generator = node_->generator();
  out.generator = generator.options();
  out.stats = generator.stats();
  out.now = SystemClock::instance().now_fresh();
  out.uptime = std::chrono::steady_clock::now() - started_;
  out.ids_issued = metrics_.ids_issued();
  out.max_batch = config_.max_batch;
  {
    std::lock_guard lock(listeners_mutex_);
    out.listeners = bound_endpoints_;
  }
  out.cluster = node_->coordinator_stats();
  out.store_loss = node_->store_loss();
  out.store_losses = node_->store_losses();
  out.segments.reset();
  if (segments_ != nullptr) {
    const auto tags = segments_->stats();
    SegmentInfo& segments = out.segments.emplace();
    segments.store = redact_store_url(segment_store_url(config_));
    segments.readiness = segments_->readiness();
    segments.auto_create = config_.segment.auto_create;
    segments.prefetch_at = config_.segment.prefetch_at;
    segments.max_step = config_.segment.max_step;
    segments.tags_known = tags.size();
    for (std::size_t i = 0; i < tags.size() && i < kMaxSegmentTagsExported; ++i) {
      segments.tags.push_back(tags[i].tag);
    }
  }
  out.opaque_ids = opaque_ids_ != nullptr;
  out.audit_log.reset();
  if (audit_log_) {
    out.audit_log = AuditInfo{audit_log_->path(), audit_log_->incarnation(), audit_log_->fsync()};
  }
  return {};
}

std::string IdService::metrics_text() const {
  const GeneratorStats s = node_->generator().stats();
  std::string extra;
  auto add = [&extra](std::string_view name, std::string_view type, std::string_view help,
                      const std::string& value) { append_metric(extra, name, type, help, value); };
  add("snowid_clock_rollback_events_total", "counter",
      "Times the clock read behind the last issued ID.", std::to_string(s.clock_behind_events));
  add("snowid_generator_refusals_total", "counter", "Calls the generator refused.",
      std::to_string(s.refusals));
  add("snowid_drift_ahead_seconds", "gauge", "Lead of the last issued ID over the wall clock.",
      fmt::format("{:.3f}", static_cast<double>(s.drift.count()) / 1000.0));
  add("snowid_state_write_failures_total", "counter", "Failed writes of the high-water mark.",
      std::to_string(s.state_write_failures));
  add("snowid_high_water_timestamp_seconds", "gauge", "Persisted high-water mark (Unix time).",
      fmt::format("{:.3f}", static_cast<double>(s.high_water.count()) / 1000.0));
  add("snowid_ready", "gauge", "Whether an ID can be issued right now.",
      readiness().ok() ? "1" : "0");
  if (audit_log_) {
    const AuditStats audit = audit_log_->stats();
    add("snowid_audit_records_total", "counter",
        "Audit log records written (one per block of IDs a request took).",
        std::to_string(audit.records));
    add("snowid_audit_write_errors_total", "counter",
        "Requests refused (503 / UNAVAILABLE) because their audit records could not be written.",
        std::to_string(audit.write_errors));
    add("snowid_audit_fsyncs_total", "counter", "fdatasync calls on the audit log (audit_fsync).",
        std::to_string(audit.fsyncs));
  }
  extra += node_->cluster_metrics();
  token_calls_.render(extra);
  if (segments_ != nullptr) extra += segment_metrics(*segments_, kMaxSegmentTagsExported);
  if (tag_book_ != nullptr) extra += business_metrics();
  {
    std::lock_guard lock(listeners_mutex_);
    for (const auto& source : metrics_sources_) source->render(extra);
  }
  return metrics_.render(extra);
}

void IdService::add_metrics_source(std::shared_ptr<const MetricsSource> source) {
  std::lock_guard lock(listeners_mutex_);
  metrics_sources_.push_back(std::move(source));
}

}  // namespace snowid::server
