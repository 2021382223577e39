// The service snowidd's protocols share: the request rules (token, agent,
// count), issuing Snowflake IDs and segment numbers, the node (its node id
// and generator), the audit log, the metrics, and the facts /v1/info
// reports, as plain values.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "access_tokens.h"
#include "audit_log.h"
#include "caller.h"
#include "metrics.h"
#include "node.h"
#include "outcome.h"
#include "service_config.h"
#include "snowid/ext/segment.h"
#include "snowid/generator.h"
#include "snowid/id_encoding.h"
#include "snowid/id_formats.h"
#include "snowid/opaque_id.h"
#include "snowid_version.h"
#include "tag_book.h"

namespace snowid::server {

using snowid::kVersion;  // CMake's project version

// Tags /metrics and /v1/info list at most; the rest are summed up in
// snowid_segment_tags. Tags a node knows are those requested from it that
// exist in the store, so the store's tag count bounds them.
inline constexpr std::size_t kMaxSegmentTagsExported = 1000;

// True if `agent` matches [a-zA-Z][a-zA-Z0-9-]* and is at most 64 characters.
bool valid_agent(std::string_view agent);

// A request for Snowflake IDs, whatever protocol carried it.
struct IdRequest {
  Caller caller = Caller::presenting(std::nullopt);
  std::string_view agent;  // empty: none
  std::uint64_t count = 1;
};

// A request for a segment tag's numbers: one (count nullopt) or `count`.
struct SegmentRequest {
  Caller caller = Caller::presenting(std::nullopt);
  std::string_view agent;
  std::string_view tag;
  std::optional<std::uint64_t> count;
  // The count numbers must be consecutive (RESP's INCRBY, whose caller owns
  // the numbers up to the last): refused before any is taken by a store
  // whose ranges are not dense (a ticket-server set).
  bool consecutive = false;
};

// A request for business IDs: `count` strings of a tag that carries a
// template (tags/tag_book.h).
struct BusinessRequest {
  Caller caller = Caller::presenting(std::nullopt);
  std::string_view agent;
  std::string_view tag;
  std::uint64_t count = 1;
};

// Segment mode's part of NodeInfo.
struct SegmentInfo {
  std::string store;  // the store URL, its password hidden
  SegmentReadiness readiness;
  bool auto_create = false;
  double prefetch_at = 0;
  std::int64_t max_step = 0;
  std::size_t tags_known = 0;
  std::vector<std::string> tags;  // at most kMaxSegmentTagsExported
};

// The segment store's rows as /db shows them: the first
// kMaxSegmentTagsExported by tag.
struct SegmentStoreRows {
  std::vector<SegmentTagRecord> rows;
  bool truncated = false;  // the store holds more rows than these
};

// The audit log's part of NodeInfo.
struct AuditInfo {
  std::string path;
  std::uint64_t incarnation = 0;
  bool fsync = false;
};

// What /v1/info and gRPC Info report, as plain values; each protocol renders
// it in its own format (info_json.h).
struct NodeInfo {
  GeneratorOptions generator;
  GeneratorStats stats;
  std::chrono::milliseconds now{0};  // Unix ms when the facts were read
  std::chrono::duration<double> uptime{0};
  std::uint64_t ids_issued = 0;
  std::uint32_t max_batch = 0;
  // The listeners' bound addresses, by protocol ("http", "grpc").
  std::vector<std::pair<std::string, std::string>> listeners;
  CoordinatorStats cluster;
  // Cluster mode: a store loss detected and not confirmed yet, and the count.
  std::optional<std::string> store_loss;
  std::uint64_t store_losses = 0;
  std::optional<SegmentInfo> segments;  // nullopt: segment mode is off
  std::optional<AuditInfo> audit_log;   // nullopt: no audit log
  bool opaque_ids = false;              // opaque_key_file is set (nothing of the key)
};

// The rules every protocol's requests go through: the bearer token first,
// then the request's parameters (count, agent; for segments the agent, then
// whether segment mode is on, then the count), then the issue. Each protocol's adapter
// parses its wire format into a request, asks here, and turns the Answer
// into its own status with one table (http_routes.cc, grpc_calls.cc).
//
// Thread-safe: front ends call it from all their threads.
class IdService {
 public:
  // What a service is made of, each opened before it (main.cc, in the order
  // of its start-up steps).
  struct Parts {
    std::unique_ptr<Node> node;  // never null
    // Segment mode's allocator; null while segment mode is off.
    std::unique_ptr<SegmentAllocator> segments;
    // The audit log (option audit_log), its header written; null: none.
    std::unique_ptr<AuditLog> audit_log;
    // The opaque ID permutation (option opaque_key_file); null: none.
    std::unique_ptr<OpaqueIds> opaque_ids;
    // (protocol, configured address) of each listener, until
    // set_bound_endpoint() gives the address it bound.
    std::vector<std::pair<std::string, std::string>> listeners;
    // The tokens (option tokens_file, read at start); null: the one token
    // of bearer_token, or none if it is empty.
    std::unique_ptr<TokenSource> tokens;
    // The tags' settings, their administration and business IDs, on their
    // own connection to the segment store; null while segment mode is off
    // or its store keeps no settings (a ticket-server set, Leaf's layout).
    std::unique_ptr<tags::TagBook> tag_book;
    // Why tag_book is null while segment mode is on (for the refusals).
    std::string tag_book_missing;
  };

  IdService(ServiceConfig config, Parts parts);

  Node& node() { return *node_; }
  Generator& generator() { return node_->generator(); }
  const ServiceConfig& config() const { return config_; }
  const Layout& layout() const { return node_->generator().options().layout; }
  Metrics& metrics() { return metrics_; }

  // Segment mode's allocator; null while segment mode is off.
  SegmentAllocator* segments() const { return segments_.get(); }
  // Closes segment mode's allocator (its store, its prefetch thread), after
  // the servers stopped: no request may be under way.
  void close_segments() {
    tag_book_.reset();
    segments_.reset();
  }

  // kOk if no token is required, the caller is trusted, or it presents a
  // token in force ("Bearer <token>": the scheme name in any case, RFC 9110
  // 11.1, compared in constant time with every token; or a connection's
  // TokenProof) that opens `scope` (access_tokens.h); else
  // kUnauthenticated, the same answer whether the token is unknown or does
  // not open `scope`. Counted per token and tag (TokenCallCounts) but for
  // kNode's admissions. Every request method below asks it first, with the
  // access its call needs; a protocol that must refuse before it even parses
  // a request (HTTP's query) asks it for TokenScope::node() on its own too.
  Answer authorize(const Caller& caller, const TokenScope& scope) const {
    return authorize(caller, scope, nullptr);
  }
  // The same, and `who` (if not null) names the caller for an audit line:
  // the token's name, "trusted network" or "no token required".
  Answer authorize(const Caller& caller, const TokenScope& scope, std::string* who) const;
  Answer authorize(const Caller& caller) const { return authorize(caller, TokenScope::node()); }
  // Whether a token is required (bearer_token, token_file or tokens_file).
  bool tokens_required() const { return tokens_->required(); }
  // How many tokens are in force (0 while none is required).
  std::size_t token_count() const {
    return tokens_->required() ? tokens_->current()->tokens().size() : 0;
  }
  // The proof of `token` for a connection to keep (RESP's AUTH, Thrift's
  // authenticate): nullopt unless it is a token in force.
  std::optional<TokenProof> prove_token(std::string_view token) const;
  // Reads tokens_file again now, whether it changed or not (SIGHUP);
  // maintain() reads it when it changes. A file that does not read leaves
  // the tokens in force and logs one error line.
  void reload_tokens() { tokens_->reload(true); }

  // Everything next_ids() checks before it issues: token, count
  // (1..max_batch), agent. For a request that must be answered without issuing
  // (HTTP HEAD).
  Answer admit(const IdRequest& request) const;
  // Appends request.count strictly increasing IDs to `out` and counts them
  // for the agent. On a refusal after the checks, IDs already appended stay
  // consumed and counted. With an audit log, kOk means their records were
  // written (audit_log.h); if that fails the IDs must not be sent:
  // kUnavailable.
  Answer next_ids(const IdRequest& request, std::vector<Id>& out);
  // One ID (request.count is not read): the hot path of single-ID requests.
  Answer next_id(const IdRequest& request, Id& out);

  // Token, agent, segment mode on (kDisabled), the tag's name, count, and
  // for a consecutive request of more than one number, dense ranges
  // (kInvalidArgument): what next_segment_ids() checks before it asks the
  // allocator.
  Answer admit(const SegmentRequest& request) const;
  // Token, segment mode on (kDisabled), the tag's name (kInvalidArgument);
  // then whether this node has served the tag since it started
  // (SegmentAllocator::serves): true means the tag exists in the store; false
  // that this node has not fetched a range of it yet. No store call.
  Answer segment_tag_served(const Caller& caller, std::string_view tag, bool& out) const;
  // The tag's next number (count nullopt) or `count` numbers, appended to
  // `out`. kInvalidArgument for a bad tag, kNotFound for an unknown one,
  // kUnavailable (a short reason naming the tag only; the store's own text
  // goes to the log, at most every 10 s, and to /v1/info behind the token)
  // while the store is down and the tag's buffers are empty.
  // A batch from a ticket-server set (whose members' ranges are handed out
  // in turn) is sorted: every batch's numbers rise, but not every batch lies
  // above the one before (segment_numbers_rise()).
  Answer next_segment_ids(const SegmentRequest& request, std::vector<std::int64_t>& out);
  // Everything next_business_ids() checks before it asks the tag book: the
  // tag's token, agent, segment mode on and keeping tag settings
  // (kDisabled), the tag's name, count (1..max_batch). For a request that
  // must be admitted before it runs (RESP's MULTI).
  Answer admit(const BusinessRequest& request) const;
  // Business IDs (tags/tag_book.h): admit(request)'s checks, then
  // request.count strings appended to `out`.
  // kNotFound: no such tag; kConflict: retired, no template, or the
  // period's numbers outgrew the template's width; kUnavailable: the store,
  // or the node's clock and the store's disagree about the period.
  Answer next_business_ids(const BusinessRequest& request, std::vector<std::string>& out);

  // Tag administration (tag_book.h), each behind an admin token and
  // written to the tag audit log with the token's name: kDisabled as
  // above, kInvalidArgument for a bad name, step, start or template (a
  // template change that could repeat strings among them), kNotFound,
  // kConflict (exists, retired, a concurrent change), kUnavailable (the
  // store).
  Answer create_tag(const Caller& caller, const tags::TagCreation& creation, tags::TagView& out);
  Answer list_tags(const Caller& caller, std::vector<tags::TagView>& out);
  Answer show_tag(const Caller& caller, std::string_view tag, tags::TagView& out);
  Answer change_tag(const Caller& caller, std::string_view tag, const tags::TagChange& change,
                    tags::TagView& out);
  Answer retire_tag(const Caller& caller, std::string_view tag, tags::TagView& out);

  // Whether each batch of a tag's numbers from this process lies above the
  // one before (issuer.h): not from a ticket-server set.
  bool segment_numbers_rise() const { return segments_ == nullptr || segments_->dense_ranges(); }

  // request.count UUIDv7s, ULIDs or ObjectIds (id_formats.h), strictly
  // increasing, appended to `out` and counted for the agent: next_ids()'s
  // checks and refusals, each ID made from one Snowflake ID of the node's
  // generator (not written to the audit log, which records Snowflake IDs
  // handed out). kUnavailable while ObjectIds wait for the second after
  // the mark the generator started above; kDisabled if the layout leaves
  // too few bits for the format.
  Answer next_formatted_ids(const IdRequest& request, IdKind kind, std::vector<FormattedId>& out);

  // Opaque IDs (opaque_id.h): each a keyed permutation of a Snowflake ID.
  // next_ids()'s checks, then kDisabled unless opaque_key_file is set, then
  // next_ids() itself, each ID then replaced in `out` by its opaque ID. The
  // audit log records the Snowflake IDs issued, not the opaque ones, so
  // `snowid check` finds duplicates as ever (opaque IDs are distinct exactly
  // when those are).
  Answer next_opaque_ids(const IdRequest& request, std::vector<Id>& out);
  // Everything next_opaque_ids() checks before it issues (HTTP HEAD).
  Answer admit_opaque(const IdRequest& request) const;
  // The opaque ID of the decimal Snowflake ID `id_text`, and the Snowflake
  // ID of `opaque_text` (in `encoding`). Token, then kDisabled unless
  // opaque_key_file is set, then kInvalidArgument for text that is no ID.
  Answer to_opaque(const Caller& caller, std::string_view id_text, Id& out) const;
  Answer from_opaque(const Caller& caller, std::string_view opaque_text, IdEncoding encoding,
                     Id& out) const;

  // The fields of `id` under the node's layout; kInvalidArgument above
  // 2^63-1 or with bits beyond the layout.
  Answer decode(const Caller& caller, std::uint64_t id, IdFields& out) const;
  // Any ID by its shape (decode_text in id_formats.h): a UUID, ULID,
  // ObjectId, or a decimal Snowflake ID under the node's layout.
  Answer decode(const Caller& caller, std::string_view text, DecodedId& out) const;
  Answer info(const Caller& caller, NodeInfo& out) const;

  // Token, then segment mode on (kDisabled); then the double buffers of the
  // first kMaxSegmentTagsExported tags by name. No store call.
  Answer segment_buffers(const Caller& caller, SegmentBuffersSnapshot& out) const;
  // Token, then segment mode on (kDisabled); then one read of the store
  // (SegmentAllocator::store_rows), kUnavailable with the store's reason
  // while it is down or busy. Blocks for at most twice the store's call
  // timeout.
  Answer segment_store_rows(const Caller& caller, SegmentStoreRows& out);

  // The one way a protocol times and counts a call: runs `answer` (a
  // callable returning an Answer) and counts the call under `protocol`,
  // `call` and its outcome, with the time it took, in the request metrics
  // shared by every protocol. Returns the Answer.
  template <typename Answerer>
  Answer timed(Protocol protocol, Call call, Answerer&& answer) {
    const auto begin = std::chrono::steady_clock::now();
    Answer answered = std::forward<Answerer>(answer)();
    count_since(protocol, call, answered.outcome, begin);
    return answered;
  }
  // The same for a call answered later than it ran (HTTP's may wait for the
  // clock): counts a call begun at `begin` and ended now with `outcome`.
  void count_since(Protocol protocol, Call call, Outcome outcome,
                   std::chrono::steady_clock::time_point begin) {
    metrics_.count_call(protocol, call, outcome, std::chrono::steady_clock::now() - begin);
  }

  // Segment mode's readiness for /readyz; nullopt while it is off. Its
  // reason names no store detail: /readyz needs no token.
  std::optional<SegmentReadiness> segment_readiness() const;
  // Ok if an ID can be issued now: the node's claim and generator (clock,
  // state file) and the audit log; otherwise the first reason.
  Status readiness() const;
  // From a timer every 100 ms: the node's upkeep, and a failing audit log's
  // check for room again.
  void maintain();

  // The audit log (option audit_log), or null.
  const AuditLog* audit_log() const { return audit_log_.get(); }
  // Whether opaque IDs are on (option opaque_key_file).
  bool opaque_ids_enabled() const { return opaque_ids_ != nullptr; }

  // A listener's address actually bound (port 0 in the config picks a free
  // one), by protocol name, for /v1/info; until then the configured one.
  void set_bound_endpoint(std::string_view protocol, const Endpoint& endpoint);

  std::string metrics_text() const;
  // The business tags' series of /metrics (tag_service.cc).
  std::string business_metrics() const;
  // Adds a listener's own metrics to metrics_text(), from then on.
  void add_metrics_source(std::shared_ptr<const MetricsSource> source);

 private:
  Answer check_agent(std::string_view agent) const;
  Answer check_count(std::uint64_t count) const;
  // kDisabled while segment mode is off.
  Answer check_segment_mode() const;
  // kInvalidArgument for a name no segment tag can have.
  Answer check_tag(std::string_view tag) const;
  Answer segment_refusal(std::string_view tag, const Error& error) const;
  // kDisabled unless the tag book is open (segment mode on, a store of record).
  Answer check_tag_book() const;
  // kDisabled while opaque_key_file is unset.
  Answer check_opaque_ids() const;
  // The formatted-ID source of the node's current generator (cluster mode
  // replaces the generator), created on first use.
  Result<FormattedIdSource*> formatted_id_source();

  // The label of `scope`'s tag in snowid_token_calls_total: bounded by the
  // store's tags and the tokens file's.
  std::string_view token_metrics_tag(const TokenScope& scope, const TokenSet& tokens) const;

  ServiceConfig config_;
  std::unique_ptr<TokenSource> tokens_;
  mutable TokenCallCounts token_calls_;
  std::chrono::steady_clock::time_point tokens_checked_{};
  std::unique_ptr<Node> node_;
  std::unique_ptr<SegmentAllocator> segments_;
  std::unique_ptr<tags::TagBook> tag_book_;
  std::string tag_book_missing_;
  std::unique_ptr<AuditLog> audit_log_;
  std::unique_ptr<OpaqueIds> opaque_ids_;
  Metrics metrics_;
  std::chrono::steady_clock::time_point started_ = std::chrono::steady_clock::now();
  // Listeners start while others serve: their addresses and metrics are
  // added under this lock.
  mutable std::mutex listeners_mutex_;
  std::vector<std::pair<std::string, std::string>> bound_endpoints_;
  std::vector<std::shared_ptr<const MetricsSource>> metrics_sources_;
  // One source per generator the node has used, kept alive as the node keeps
  // its generators: a request may still hold an earlier one.
  std::atomic<FormattedIdSource*> formatted_ids_{nullptr};
  std::mutex formatted_ids_mutex_;
  std::vector<std::unique_ptr<FormattedIdSource>> formatted_id_sources_;
};

}  // namespace snowid::server
