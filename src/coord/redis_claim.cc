// The claim and the fence in Redis: how a node leases a node id from Redis
// and why two nodes never issue the same ID under it.
//
// KEYS (one hash tag per cluster):
//   snowid:{C}:claim:<id>        hash {token, record}; PEXPIRE = the lease.
//                                token is random per claim; record is the
//                                holder's JSON (ClaimRecord).
//   snowid:{C}:reservation:<id>  decimal Unix ms H; never expires.
//   snowid:{C}:created           Unix ms of the first claim in this store.
//
// THE RESERVATION INVARIANT is etcd's (etcd_claim.cc): a node issues under
// node id N only in time units starting at or before the H it last wrote, and
// it writes H only in a script that first checks that N's claim still holds
// its token. Redis runs a script atomically, so:
//   - once the claim is gone (TTL ran out, deleted, taken), no write of H by
//     its former holder can succeed: H is final;
//   - a new holder creates the claim in one script that also reads H, and
//     starts strictly above it.
// Two claimers racing for one id cannot both win: the second script sees the
// first one's token.
//
// A STORE THAT LOST ITS DATA (restarted without persistence, flushed, a
// replica promoted before it had the last writes) has no H for any id, and
// taking an id at floor 0 could repeat what its last holder issued. The
// `created` key tells the cases apart: it is written by the first claim after
// the data went, as the later of Redis's own clock (TIME) and the claimer's,
// so that a claimer whose clock is behind does not lower it. A missing H is
// read as "unknown, lost at about `created`" and the floor becomes created +
// lease_ttl + reserve_ahead: a holder from before the loss stops issuing within
// lease_ttl of it (its renewals fail), and issues at most reserve_ahead ahead
// of its clock as long as the generator's lead (max_drift) stays below that.
// For an id first used long after `created`, that floor lies in the past and
// costs nothing; the first nodes of a cluster new to the store start that far
// ahead (an operator who knows the store is new may SET the created key to 0).
// Not covered: clocks further apart than the peer check allows, and a holder
// whose IDs ran further ahead of its clock (a floor set this way just before a
// second loss). The value of `created` is the store's incarnation (Claim::
// store_created): a node that served the cluster before and finds another
// one reports the loss (server/cluster_marks.h). Run Redis with appendonly yes and
// appendfsync always, so that a restart keeps every reservation
// (docs/design.md).
//
// THE FENCE. A key's TTL counts from when Redis ran the command, which is
// after we sent it, so the deadline is (time the last acknowledged renewal
// was SENT) + TTL - safety margin, on CLOCK_BOOTTIME. Redis expires keys by
// its own wall clock: a forward step of the Redis host's clock ends leases
// early. That costs availability (another node may take the id while its
// holder still serves until its deadline), never a duplicate: the newcomer
// starts above the H the holder can no longer raise.
#include "redis_claim.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>

#include "time_text.h"

namespace snowid::coord {

using std::chrono::milliseconds;
using std::chrono::nanoseconds;

namespace {

// KEYS: claim, reservation, created. ARGV: token, record, ttl ms, now ms,
// this process's token prefix. {1, H or "", created, 1 if this script wrote
// created} if the id is ours now; created is written, if absent, as the later
// of Redis's TIME and the claimer's clock (Redis 7 replicates scripts by
// their effects, so reading TIME is allowed);
// {0, holder record} if not. A claim left by this process (a renewal failed
// while the store was away, and freeing it failed too) is ours to take again:
// the process issues nothing under it any more.
constexpr const char* kClaimScript = R"lua(
local holder = redis.call('HGET', KEYS[1], 'token')
if holder and holder ~= ARGV[1] and string.sub(holder, 1, #ARGV[5]) ~= ARGV[5] then
  return {0, redis.call('HGET', KEYS[1], 'record') or ''}
end
redis.call('HSET', KEYS[1], 'token', ARGV[1], 'record', ARGV[2])
redis.call('PEXPIRE', KEYS[1], ARGV[3])
local created = redis.call('GET', KEYS[3])
local fresh = 0
if not created then
  local time = redis.call('TIME')
  local store_ms = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
  created = string.format('%d', math.max(store_ms, tonumber(ARGV[4])))
  redis.call('SET', KEYS[3], created)
  fresh = 1
end
return {1, redis.call('GET', KEYS[2]) or '', created, fresh}
)lua";

// KEYS: claim. ARGV: token, ttl ms. 1 if renewed, 0 if the claim is not ours.
constexpr const char* kRenewScript = R"lua(
if redis.call('HGET', KEYS[1], 'token') ~= ARGV[1] then return 0 end
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return 1
)lua";

// KEYS: claim, reservation. ARGV: token, H, record, ttl ms. Raises H (never
// lowers it), republishes the record and renews the lease. 0 if not ours.
constexpr const char* kReserveScript = R"lua(
if redis.call('HGET', KEYS[1], 'token') ~= ARGV[1] then return 0 end
local old = redis.call('GET', KEYS[2])
if old and not tonumber(old) then
  return redis.error_reply(KEYS[2] .. ' holds ' .. old .. ', not a Unix-ms timestamp')
end
if not old or tonumber(old) < tonumber(ARGV[2]) then redis.call('SET', KEYS[2], ARGV[2]) end
redis.call('HSET', KEYS[1], 'record', ARGV[3])
redis.call('PEXPIRE', KEYS[1], ARGV[4])
return 1
)lua";

// KEYS: claim, reservation. ARGV: token, lowered H or "". Deletes the claim
// (setting H first if given). 0 if the claim was not ours.
constexpr const char* kReleaseScript = R"lua(
if redis.call('HGET', KEYS[1], 'token') ~= ARGV[1] then return 0 end
if ARGV[2] ~= '' then redis.call('SET', KEYS[2], ARGV[2]) end
redis.call('DEL', KEYS[1])
return 1
)lua";

// KEYS: claims. The record of each ("" if gone meanwhile).
constexpr const char* kRecordsScript = R"lua(
local records = {}
for i, key in ipairs(KEYS) do records[i] = redis.call('HGET', key, 'record') or '' end
return records
)lua";

// Every cluster's ID space (check_distinct_id_space()): cluster -> layout.
constexpr const char* kRedisIdSpacesKey = "snowid:~id-spaces";

// A token is the process's instance, '-' and the number of its claim.
std::string token_prefix(const ClaimRecord& record) { return record.instance + "-"; }

}  // namespace

std::string redis_prefix(std::string_view cluster) {
  return fmt::format("snowid:{{{}}}:", cluster);
}
std::string redis_claim_key(std::string_view cluster, std::uint64_t node_id) {
  return fmt::format("{}claim:{}", redis_prefix(cluster), node_id);
}
std::string redis_reservation_key(std::string_view cluster, std::uint64_t node_id) {
  return fmt::format("{}reservation:{}", redis_prefix(cluster), node_id);
}
std::string redis_created_key(std::string_view cluster) {
  return redis_prefix(cluster) + "created";
}

std::optional<std::uint64_t> redis_node_id_of_key(std::string_view key) {
  const std::size_t colon = key.rfind(':');
  if (colon == std::string_view::npos) return std::nullopt;
  return parse_node_id(key.substr(colon + 1));
}

Result<std::vector<std::string>> redis_scan(RedisClient& client, const std::string& pattern) {
  std::vector<std::string> keys;
  std::string cursor = "0";
  do {
    auto page = client.command({"SCAN", cursor, "MATCH", pattern, "COUNT", "1000"});
    if (!page.ok()) return page.error();
    if (page->elements.size() != 2) {
      return Error{ErrorCode::kUnavailable, "redis answered SCAN with an unexpected reply"};
    }
    cursor = page->elements[0].text;
    for (const RedisReply& key : page->elements[1].elements) keys.push_back(key.text);
  } while (cursor != "0");
  std::sort(keys.begin(), keys.end());
  keys.erase(std::unique(keys.begin(), keys.end()), keys.end());  // SCAN may repeat a key
  return keys;
}

RedisClaim::RedisClaim(std::unique_ptr<RedisClient> client, const RedisOptions& options)
    : LeasedClaim(options), client_(std::move(client)), options_(options) {}

std::string RedisClaim::ttl_ms() const {
  return std::to_string(std::chrono::duration_cast<milliseconds>(options_.lease_ttl).count());
}

Result<ClaimsSeen> RedisClaim::read_claims(std::optional<std::uint64_t> preferred) {
  token_.clear();
  created_now_ = false;
  auto keys = redis_scan(*client_, redis_prefix(options_.cluster) + "claim:*");
  if (!keys.ok()) return keys.error();
  ClaimsSeen seen;
  if (keys->empty()) return seen;
  auto records = client_->eval(kRecordsScript, *keys, {});
  if (!records.ok()) return records.error();
  for (std::size_t i = 0; i < keys->size() && i < records->elements.size(); ++i) {
    const std::string& value = records->elements[i].text;
    const auto id = redis_node_id_of_key((*keys)[i]);
    if (!id || value.empty() || left_by_this_process(value)) continue;
    note_claim(seen, *id, value, preferred);
  }
  return seen;
}

Result<bool> RedisClaim::try_claim(std::uint64_t node_id, std::string* holder) {
  const std::string token = token_prefix(record_) + std::to_string(++claims_made_);
  record_.set_node_id(node_id, options_.layout);
  record_.wall_time = clock().now_fresh();
  const std::string reserved_key = redis_reservation_key(options_.cluster, node_id);
  const nanoseconds sent = boot_time_now();
  // A script whose answer was lost may have been applied: the retry inside
  // RedisClient then finds our own token, which the script accepts as ours.
  auto answer = client_->eval(kClaimScript,
                              {redis_claim_key(options_.cluster, node_id), reserved_key,
                               redis_created_key(options_.cluster)},
                              {token, record_.to_json(), ttl_ms(),
                               std::to_string(clock().now_fresh().count()), token_prefix(record_)});
  if (!answer.ok()) return answer.error();
  const auto& parts = answer->elements;
  if (parts.empty() || parts[0].kind != RedisReply::Kind::kInteger) {
    return Error{ErrorCode::kUnavailable, "redis answered the claim script unexpectedly"};
  }
  if (parts[0].integer == 0) {
    if (parts.size() > 1) *holder = parts[1].text;
    return false;
  }
  if (parts.size() < 4) {
    return Error{ErrorCode::kUnavailable, "redis answered the claim script unexpectedly"};
  }
  token_ = token;
  node_id_ = node_id;
  deadline_ = sent + options_.lease_ttl - options_.safety_margin;
  floor_ = milliseconds{0};
  auto created = parse_reservation(redis_created_key(options_.cluster), parts[2].text);
  if (!created.ok()) {
    abandon();
    return created.error();
  }
  created_ = *created;
  created_now_ = created_now_ || parts[3].integer == 1;
  if (!parts[1].text.empty()) {
    auto parsed = parse_reservation(reserved_key, parts[1].text);
    if (!parsed.ok()) {
      abandon();
      return parsed.error();
    }
    floor_ = *parsed;
  } else {
    // No reservation: never used, or lost with the store's data (see above).
    floor_ = std::max(milliseconds{0},
                      created_ + std::chrono::duration_cast<milliseconds>(options_.lease_ttl) +
                          options_.reserve_ahead);
  }
  reservation_ = floor_;
  return true;
}

Result<StoreTime> RedisClaim::read_store_time() {
  auto answer = client_->command({"TIME"});
  if (!answer.ok()) return answer.error();
  const auto& parts = answer->elements;
  std::int64_t seconds = 0;
  std::int64_t micros = 0;
  const auto number = [](const std::string& text, std::int64_t& out) {
    const char* end = text.data() + text.size();
    return !text.empty() && std::from_chars(text.data(), end, out).ptr == end && out >= 0;
  };
  if (parts.size() != 2 || !number(parts[0].text, seconds) || !number(parts[1].text, micros)) {
    return Error{ErrorCode::kUnavailable, "redis answered TIME unexpectedly"};
  }
  return StoreTime{milliseconds{seconds * 1000 + micros / 1000}, milliseconds{1}};
}

Result<std::vector<ClusterIdSpace>> RedisClaim::read_id_spaces() {
  auto answer = client_->command({"HGETALL", kRedisIdSpacesKey});
  if (!answer.ok()) return answer.error();
  std::vector<ClusterIdSpace> spaces;
  const auto& parts = answer->elements;
  for (std::size_t i = 0; i + 1 < parts.size(); i += 2) {
    spaces.push_back({parts[i].text, parts[i + 1].text});
  }
  return spaces;
}

Status RedisClaim::publish_id_space(const std::string& layout) {
  auto answer = client_->command({"HSET", kRedisIdSpacesKey, options_.cluster, layout});
  if (!answer.ok()) return answer.error();
  return {};
}

StepResult RedisClaim::renew_lease() {
  if (!held()) return {StepOutcome::kClaimLost, "no claim is held"};
  const nanoseconds sent = boot_time_now();
  auto answer = client_->eval(kRenewScript, {redis_claim_key(options_.cluster, node_id_)},
                              {token_, ttl_ms()});
  if (!answer.ok()) return {StepOutcome::kStoreFailed, answer.error().message};
  if (answer->integer != 1) {
    return {StepOutcome::kClaimLost,
            fmt::format("the claim on node id {} expired or was taken", node_id_)};
  }
  deadline_ = sent + options_.lease_ttl - options_.safety_margin;
  return {};
}

StepResult RedisClaim::write_reservation(milliseconds target) {
  const nanoseconds sent = boot_time_now();
  auto answer =
      client_->eval(kReserveScript,
                    {redis_claim_key(options_.cluster, node_id_),
                     redis_reservation_key(options_.cluster, node_id_)},
                    {token_, std::to_string(target.count()), record_.to_json(), ttl_ms()});
  if (!answer.ok()) return {StepOutcome::kStoreFailed, answer.error().message};
  if (answer->integer != 1) {
    return {StepOutcome::kClaimLost,
            fmt::format("the claim on node id {} is gone (expired, deleted or taken); the "
                        "reservation stays at {}",
                        node_id_, format_time(reservation_))};
  }
  // Issue below the new reservation only once every replica has it: a
  // failover to a replica that missed it would hand the id over below it.
  Status copied = replicated(client_->connections());
  if (!copied.ok()) return {StepOutcome::kStoreFailed, copied.error().message};
  reservation_written(target);
  deadline_ = sent + options_.lease_ttl - options_.safety_margin;
  return {};
}

Status RedisClaim::replicated(std::uint64_t connection) {
  auto info = client_->command({"INFO", "replication"});
  if (!info.ok()) return info.error();
  // Replicas in sync ("slave0:ip=...,state=online,..."): one still loading
  // its first copy has nothing to lose and nothing to confirm.
  long long replicas = 0;
  const std::string_view text = info->text;
  for (std::size_t at = text.find("\nslave"); at != std::string_view::npos;
       at = text.find("\nslave", at + 1)) {
    const std::size_t end = text.find('\n', at + 1);
    if (text.substr(at, end - at).find("state=online") != std::string_view::npos) ++replicas;
  }
  if (replicas == 0) return {};
  const long long wait_ms = std::max<long long>(
      1, std::chrono::duration_cast<milliseconds>(options_.request_timeout).count() / 2);
  auto acknowledged = client_->command({"WAIT", std::to_string(replicas), std::to_string(wait_ms)});
  if (!acknowledged.ok()) return acknowledged.error();
  if (client_->connections() != connection) {
    return Error{ErrorCode::kUnavailable,
                 "the connection to Redis changed before its replicas confirmed the reservation"};
  }
  if (acknowledged->integer < replicas) {
    return Error{ErrorCode::kUnavailable,
                 fmt::format("only {} of {} Redis replicas confirmed the reservation within {} ms",
                             acknowledged->integer, replicas, wait_ms)};
  }
  return {};
}

Status RedisClaim::release(std::optional<milliseconds> last_issued) {
  if (!held()) return {};
  std::string lowered;
  // Nothing above last_issued was issued (the caller's promise), so the next
  // holder may start right above it instead of above our reservation.
  if (last_issued && *last_issued < reservation_) {
    lowered = std::to_string(std::max(*last_issued, floor_).count());
  }
  auto answer = client_->eval(kReleaseScript,
                              {redis_claim_key(options_.cluster, node_id_),
                               redis_reservation_key(options_.cluster, node_id_)},
                              {token_, lowered});
  token_.clear();
  if (!answer.ok()) return answer.error();
  return {};
}

void RedisClaim::abandon() {
  if (!held()) return;
  // Frees the id at once if the claim is still ours; it expires anyway.
  (void)client_->eval(kReleaseScript,
                      {redis_claim_key(options_.cluster, node_id_),
                       redis_reservation_key(options_.cluster, node_id_)},
                      {token_, ""});
  token_.clear();
}

}  // namespace snowid::coord
