// The claim and the fence in a SQL database: how a node leases a node id from
// PostgreSQL or MariaDB/MySQL and why two nodes never issue the same ID under it.
//
// THE TABLE snowid_node_claims (sql/node_claims.sql): per (cluster, node id)
// a row with holder (random per claim: the process's instance, '-', the
// number of its claim), record (ClaimRecord JSON), lease_until (Unix ms by
// the DATABASE's clock) and reservation H (Unix ms). Row -1 of a cluster is
// its created marker (in its reservation column). Rows are never deleted by
// snowid: a release empties the holder and keeps H.
//
// THE RESERVATION INVARIANT is etcd's (etcd_claim.cc): a node issues under
// node id N only in time units starting at or before the H it last wrote,
// and it writes H only in an UPDATE ... WHERE node_id = N AND holder = <its
// identity> AND lease_until > <the database's now>, whose matched-row count
// it checks. A row is updated under its row lock, so:
//   - once the claim is gone (lease ended by the database's clock and taken,
//     released, evicted), no write of H by its former holder matches: H is
//     final;
//   - a new holder takes the row by one UPDATE that succeeds only if the
//     holder is empty or its lease has ended, then reads H (no one else can
//     raise it any more) and starts strictly above it.
// Two claimers racing for one id cannot both win: the second UPDATE waits for
// the first one's row lock and then sees its live lease.
//
// A DATABASE THAT LOST THE ROWS (restored from an old backup, a replica
// promoted before it had the last commits, the table dropped) is Redis's
// case (redis_claim.cc): a missing H is read as "lost at about `created`",
// and the floor becomes created + lease_ttl + reserve_ahead. The marker is
// written as the later of the database's clock and the claimer's, and read in
// the same statement as H.
//
// THE FENCE. The lease ends by the database's clock, counted from when the
// database ran the statement, which is after we sent it, so the deadline is
// (time the last acknowledged renewal was SENT) + TTL - safety margin, on
// CLOCK_BOOTTIME. A step of the database host's clock only ends leases early
// (availability, never a duplicate).
#include "sql_claim.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>

#include "time_text.h"

namespace snowid::coord {

using sql::SqlValue;
using std::chrono::milliseconds;
using std::chrono::nanoseconds;

namespace {

constexpr const char* kReadClaims =
    "SELECT node_id, record FROM snowid_node_claims WHERE cluster = $1 AND node_id >= 0 "
    "AND holder IS NOT NULL AND lease_until > {now}";
// $1 cluster, $2 the claimer's clock (Unix ms).
constexpr const char* kWriteCreated =
    "{insert} snowid_node_claims (cluster, node_id, reservation) "
    "VALUES ($1, -1, GREATEST({now}, $2)){ignore}{matched}";
constexpr const char* kAddRow =
    "{insert} snowid_node_claims (cluster, node_id) VALUES ($1, $2){ignore}";
// $3 holder, $4 record, $5 lease ms, $6 this process's holder prefix + '%':
// a claim left by this process (a renewal failed while the database was
// away, and freeing it failed too) is ours to take again.
constexpr const char* kTake =
    "UPDATE snowid_node_claims SET holder = $3, record = $4, lease_until = {now} + $5, "
    "writes = writes + 1 WHERE cluster = $1 AND node_id = $2 AND (holder IS NULL OR "
    "lease_until <= {now} OR holder = $3 OR holder LIKE $6){matched}";
// The row of $2 and the created marker, read together.
constexpr const char* kReadTaken =
    "SELECT node_id, reservation, COALESCE(holder, ''), COALESCE(record, '') "
    "FROM snowid_node_claims WHERE cluster = $1 AND node_id IN (-1, $2)";
// $3 holder, $4 lease ms.
constexpr const char* kRenew =
    "UPDATE snowid_node_claims SET lease_until = {now} + $4, writes = writes + 1 "
    "WHERE cluster = $1 AND node_id = $2 AND holder = $3 AND lease_until > {now}{matched}";
// $3 holder, $4 H, $5 record, $6 lease ms. Raises H, never lowers it.
constexpr const char* kReserve =
    "UPDATE snowid_node_claims SET reservation = GREATEST(reservation, $4), record = $5, "
    "lease_until = {now} + $6, writes = writes + 1 WHERE cluster = $1 AND node_id = $2 "
    "AND holder = $3 AND lease_until > {now}{matched}";
// $3 holder, $4 the lowered H (or the largest BIGINT: keep H).
constexpr const char* kRelease =
    "UPDATE snowid_node_claims SET holder = NULL, record = NULL, lease_until = 0, "
    "reservation = LEAST(reservation, $4), writes = writes + 1 "
    "WHERE cluster = $1 AND node_id = $2 AND holder = $3{matched}";

// Every cluster's ID space, published in its created marker's record.
constexpr const char* kReadIdSpaces =
    "SELECT cluster, COALESCE(record, '') FROM snowid_node_claims WHERE node_id = -1";
// $1 cluster, $2 its layout, described.
constexpr const char* kPublishIdSpace =
    "UPDATE snowid_node_claims SET record = $2 WHERE cluster = $1 AND node_id = -1";

// The database's clock (Unix ms), for the takeover rule (leased_claim.h).
constexpr const char* kReadClock = "SELECT {now}";

constexpr std::int64_t kKeepReservation = std::numeric_limits<std::int64_t>::max();

SqlValue id_value(std::uint64_t node_id) { return static_cast<std::int64_t>(node_id); }

}  // namespace

SqlClaim::SqlClaim(std::unique_ptr<SqlClient> client, const SqlStoreOptions& options)
    : LeasedClaim(options), client_(std::move(client)), options_(options) {}

std::int64_t SqlClaim::ttl_ms() const {
  return std::chrono::duration_cast<milliseconds>(options_.lease_ttl).count();
}

Result<ClaimsSeen> SqlClaim::read_claims(std::optional<std::uint64_t> preferred) {
  holder_.clear();
  created_now_ = false;
  auto rows = client_->query(kReadClaims, {options_.cluster});
  if (!rows.ok()) return rows.error();
  ClaimsSeen seen;
  for (const auto& row : *rows) {
    const auto id = row.size() == 2 ? parse_node_id(row[0]) : std::nullopt;
    if (!id || left_by_this_process(row[1])) continue;
    note_claim(seen, *id, row[1], preferred);
  }
  return seen;
}

Status SqlClaim::write_created_marker() {
  auto wrote = client_->query(kWriteCreated, {options_.cluster, clock().now_fresh().count()});
  if (!wrote.ok()) return wrote.error();
  created_now_ = created_now_ || !wrote->empty();
  return {};
}

Result<bool> SqlClaim::try_claim(std::uint64_t node_id, std::string* holder) {
  if (Status marked = write_created_marker(); !marked.ok()) return marked.error();
  auto added = client_->query(kAddRow, {options_.cluster, id_value(node_id)});
  if (!added.ok()) return added.error();
  const std::string prefix = record_.instance + "-";
  const std::string identity = prefix + std::to_string(++claims_made_);
  record_.set_node_id(node_id, options_.layout);
  record_.wall_time = clock().now_fresh();
  const nanoseconds sent = boot_time_now();
  auto taken = client_->query(kTake, {options_.cluster, id_value(node_id), identity,
                                      record_.to_json(), ttl_ms(), prefix + "%"});
  if (!taken.ok()) return taken.error();
  auto rows = client_->query(kReadTaken, {options_.cluster, id_value(node_id)});
  if (!rows.ok()) return rows.error();
  const std::vector<std::string>* marker = nullptr;
  const std::vector<std::string>* row = nullptr;
  for (const auto& r : *rows) {
    if (r.size() == 4) (r[0] == "-1" ? marker : row) = &r;
  }
  if (row == nullptr || (*row)[2] != identity) {
    if (row != nullptr) *holder = (*row)[3];
    return false;
  }
  holder_ = identity;
  node_id_ = node_id;
  deadline_ = sent + options_.lease_ttl - options_.safety_margin;
  if (marker == nullptr) {
    abandon();
    return Error{ErrorCode::kUnavailable,
                 fmt::format("the created marker of cluster '{}' vanished from {} while node id "
                             "{} was claimed (rows lost?); claiming again",
                             options_.cluster, client_->dialect().title, node_id)};
  }
  if (Status floor = set_floor(node_id, (*row)[1], (*marker)[1]); !floor.ok()) {
    abandon();
    return floor.error();
  }
  return true;
}

Status SqlClaim::set_floor(std::uint64_t node_id, const std::string& reservation,
                           const std::string& created) {
  auto marker = parse_reservation(
      fmt::format("the created marker (node id -1) of cluster '{}'", options_.cluster), created);
  if (!marker.ok()) return marker.error();
  created_ = *marker;
  auto parsed = parse_reservation(
      fmt::format("the reservation of node id {} of cluster '{}'", node_id, options_.cluster),
      reservation);
  if (!parsed.ok()) return parsed.error();
  // No reservation: never used, or lost with the database's rows (see above).
  floor_ = parsed->count() > 0
               ? *parsed
               : created_ + std::chrono::duration_cast<milliseconds>(options_.lease_ttl) +
                     options_.reserve_ahead;
  reservation_ = floor_;
  return {};
}

Result<StoreTime> read_database_clock(SqlClient& client) {
  const char* title = client.dialect().title;
  auto rows = client.query(kReadClock, {});
  if (!rows.ok()) return rows.error();
  if (rows->size() != 1 || rows->front().size() != 1) {
    return Error{ErrorCode::kUnavailable,
                 fmt::format("{} answered the read of its clock with no value", title)};
  }
  auto at = parse_reservation(fmt::format("{}'s clock", title), rows->front()[0]);
  if (!at.ok()) return at.error();
  return StoreTime{*at, milliseconds{1}};
}

Result<StoreTime> SqlClaim::read_store_time() { return read_database_clock(*client_); }

Result<std::vector<ClusterIdSpace>> SqlClaim::read_id_spaces() {
  auto rows = client_->query(kReadIdSpaces, {});
  if (!rows.ok()) return rows.error();
  std::vector<ClusterIdSpace> spaces;
  for (const auto& row : *rows) {
    if (row.size() == 2 && !row[1].empty()) spaces.push_back({row[0], row[1]});
  }
  return spaces;
}

Status SqlClaim::publish_id_space(const std::string& layout) {
  auto written = client_->query(kPublishIdSpace, {options_.cluster, layout});
  if (!written.ok()) return written.error();
  return {};
}

std::string SqlClaim::store_title() const { return client_->dialect().title; }

StepResult SqlClaim::renew_lease() {
  if (!held()) return {StepOutcome::kClaimLost, "no claim is held"};
  const nanoseconds sent = boot_time_now();
  auto renewed = client_->query(kRenew, {options_.cluster, id_value(node_id_), holder_, ttl_ms()});
  if (!renewed.ok()) return {StepOutcome::kStoreFailed, renewed.error().message};
  if (renewed->empty()) {
    return {StepOutcome::kClaimLost,
            fmt::format("the claim on node id {} expired or was taken", node_id_)};
  }
  deadline_ = sent + options_.lease_ttl - options_.safety_margin;
  return {};
}

StepResult SqlClaim::write_reservation(milliseconds target) {
  const nanoseconds sent = boot_time_now();
  auto written = client_->query(kReserve, {options_.cluster, id_value(node_id_), holder_,
                                           target.count(), record_.to_json(), ttl_ms()});
  if (!written.ok()) return {StepOutcome::kStoreFailed, written.error().message};
  if (written->empty()) {
    return {StepOutcome::kClaimLost,
            fmt::format("the claim on node id {} is gone (expired, released or taken); the "
                        "reservation stays at {}",
                        node_id_, format_time(reservation_))};
  }
  reservation_written(target);
  deadline_ = sent + options_.lease_ttl - options_.safety_margin;
  return {};
}

Status SqlClaim::release(std::optional<milliseconds> last_issued) {
  if (!held()) return {};
  std::int64_t lowered = kKeepReservation;
  // Nothing above last_issued was issued (the caller's promise), so the next
  // holder may start right above it instead of above our reservation.
  if (last_issued && *last_issued < reservation_) {
    lowered = std::max(*last_issued, floor_).count();
  }
  auto released =
      client_->query(kRelease, {options_.cluster, id_value(node_id_), holder_, lowered});
  holder_.clear();
  if (!released.ok()) return released.error();
  return {};
}

void SqlClaim::abandon() {
  if (!held()) return;
  // Frees the id at once if the claim is still ours; its lease ends anyway.
  (void)client_->query(kRelease, {options_.cluster, id_value(node_id_), holder_, kKeepReservation});
  holder_.clear();
}

}  // namespace snowid::coord
