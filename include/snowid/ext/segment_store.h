// Extension header (include/snowid/ext/README.md): for embedding snowid's
// server parts, outside the stable public API; it may change between versions.
//
// Where segment mode keeps its ranges: one row per business tag in the table
// `snowid_segments` (tag, max_id, step, description, updated_at).
//
// A tag's row holds `max_id`, the first number no node has taken yet. Taking
// a range is ONE atomic statement that raises max_id by an increment and
// returns the new value; the caller owns [new max_id - increment, new max_id).
// Because max_id only ever grows and every increment is applied atomically by
// the database, two callers (threads, processes or nodes) never receive
// overlapping ranges. Numbers are non-negative and fit a signed 64-bit column.
//
// Stores are chosen by URL (see open_segment_store). A store is not
// thread-safe: use one from one thread at a time (SegmentAllocator calls its
// store from one background thread). Every call is bounded in time; a store
// whose connection fails reconnects on its next call.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "snowid/error.h"
#include "snowid/segment_tag.h"

namespace snowid {

// Tag names: validate_segment_tag() of snowid/segment_tag.h, which every
// store applies before a statement.

// Bounds every store and the CLI apply to a tag's configured step.
inline constexpr std::int64_t kMinSegmentStep = 1;
inline constexpr std::int64_t kMaxSegmentStep = 1'000'000'000;

// list_tags() without a bound: the largest row count both databases' LIMIT takes.
inline constexpr std::size_t kAllSegmentTags = 9'223'372'036'854'775'807u;

// One row of snowid_segments.
struct SegmentTagRecord {
  std::string tag;
  std::int64_t max_id = 0;  // first number not yet taken by any node
  std::int64_t step = 0;    // configured step: the smallest range a fetch takes
  std::string description;
  std::string updated_at;  // "YYYY-MM-DD HH:MM:SS[.ffffff]" UTC, as the database wrote it
};

// Numbers first, first + stride, first + 2 * stride, ... below end, now
// owned by the caller alone. A single store's ranges are dense (stride 1); a
// ticket-server set's (open_ticket_store) keep one residue class.
struct SegmentRange {
  std::int64_t first = 0;
  std::int64_t end = 0;              // exclusive; the tag's new max_id
  std::int64_t configured_step = 0;  // the tag's step column when the range was taken
  std::int64_t stride = 1;
  // Which store of a ticket-server set gave the range (0 for a single
  // store). Ranges of one source never overlap and come in increasing order;
  // ranges of different sources overlap as intervals but share no number.
  std::size_t source = 0;
};

// A ticket server's place in its set (Flickr's auto_increment_increment and
// auto_increment_offset; Tinyid's delta and remainder): the store hands out
// only numbers n with n % increment == remainder. Recorded in the store
// itself, once, so that every node agrees on it. {1, 0}: a store of its own.
struct TicketIdentity {
  std::int64_t increment = 1;  // 1..kMaxTicketIncrement
  std::int64_t remainder = 0;  // 0..increment-1

  bool operator==(const TicketIdentity&) const = default;
};
inline constexpr std::int64_t kMaxTicketIncrement = 64;

// kInvalidArgument unless 1 <= increment <= kMaxTicketIncrement and
// 0 <= remainder < increment.
Status validate_ticket_identity(TicketIdentity identity);

// The identity of a ticket server given its offset as an operator does: as
// snowid's remainder (0..increment-1) or as MySQL's 1-based
// auto_increment_offset (1..increment; Flickr's offsets 1 and 2 of 2). The
// two agree on 1..increment-1, where both mean the numbers n with
// n % increment == offset; offset == increment is MySQL's name for the
// numbers n % increment == 0, snowid's remainder 0, so the identity holds
// offset % increment. Two stores given offsets 0 and increment are both
// remainder 0 and a ticket-server set refuses the pair. kInvalidArgument
// outside 1 <= increment <= kMaxTicketIncrement, 0 <= offset <= increment,
// saying how MySQL's and snowid's offsets translate.
Result<TicketIdentity> ticket_identity_from_offset(std::int64_t increment, std::int64_t offset);

struct SegmentStoreOptions {
  // Longest time one call may take, connection included. PostgreSQL: also
  // the connect_timeout and the server-side statement_timeout. SQLite: the
  // busy timeout while another process holds the write lock. MySQL: rounded
  // up to whole seconds, the connect, read and write timeouts of the socket
  // and innodb_lock_wait_timeout (a connect plus one round trip per call).
  std::chrono::milliseconds call_timeout{3000};
};

class SegmentStore {
 public:
  virtual ~SegmentStore() = default;

  // "sqlite", "postgresql" or "mysql" (MariaDB or MySQL).
  virtual const char* kind() const = 0;

  // Adds a tag whose first number will be `start`. kAlreadyExists if the tag
  // is present, kInvalidArgument for a bad tag, start or step.
  virtual Status create_tag(std::string_view tag, std::int64_t start, std::int64_t step,
                            std::string_view description) = 0;

  // Checks that the database answers (reconnecting if needed).
  virtual Status ping() = 0;

  // The first `max_rows` tags by name, ordered by name (every tag with
  // kAllSegmentTags). A caller that must stay cheap on a store of many tags
  // (snowidd's /db) passes its own bound; the database reads no further.
  virtual Result<std::vector<SegmentTagRecord>> list_tags(std::size_t max_rows) = 0;

  // One tag's row, or nullopt if absent. (The default reads every row.)
  virtual Result<std::optional<SegmentTagRecord>> read_tag(std::string_view tag);

  // Changes the configured step. kNotFound for an unknown tag.
  virtual Status set_step(std::string_view tag, std::int64_t step) = 0;

  // Atomically raises the tag's max_id by `increment` (by its configured step
  // if absent) and returns the range taken. kNotFound for an unknown tag,
  // kUnavailable if the database cannot be reached or the numbers would pass
  // 2^63-1. On any error the range may or may not have been taken; it is
  // then skipped, never handed out (the caller must not retry with a guess).
  virtual Result<SegmentRange> take_range(std::string_view tag,
                                          std::optional<std::int64_t> increment) = 0;

  // The tag's max_id in the store that gave the ranges of `source` (see
  // SegmentRange::source; 0 for a single store), without taking anything.
  // kNotFound for an unknown tag. (The default reads every row.)
  virtual Result<std::int64_t> max_id(std::string_view tag, std::size_t source);

  // Why stores of a set are never used (a ticket server whose identity
  // disagrees), one message each; empty for a single store or a sound set.
  // The messages name stores by their place in the set, never by URL.
  virtual std::vector<std::string> refusals() const { return {}; }

  // The identity recorded in the store; {1, 0} if none (the default for
  // stores that cannot be ticket servers).
  virtual Result<TicketIdentity> ticket_identity() { return TicketIdentity{}; }

  // True if every range this store hands out is dense (stride 1), as a
  // single store's are; false for a ticket-server set, whose ranges step by
  // its increment, so that no two of its numbers are ever consecutive. A
  // property of the store's kind: no call, safe from any thread.
  virtual bool dense_ranges() const { return true; }

  // Records the identity. Only on a store without tags, since numbers it
  // handed out densely would collide with another ticket server's; a store
  // that already has an identity accepts only the same one again.
  virtual Status set_ticket_identity(TicketIdentity identity);

  // --- snowid's own rows ---------------------------------------------------
  // Rows whose key starts with '#' (no tag can: validate_segment_tag) hold
  // what snowid keeps beside the tags in the same table, so that a store
  // needs no schema of its own for them and every node sees them: a tag's
  // settings ('#tag:<tag>', src/business/tag_settings.h) and a business
  // tag's numbers per period ('#<period>:<tag>', which restart at 1 in each
  // period). The calls below take such a key (kInvalidArgument for a key
  // that does not start with '#', or is longer than kMaxOwnRowCharacters
  // characters) and are otherwise the tag calls' equals: take_own_range
  // raises max_id atomically exactly as take_range does.
  // The defaults refuse (kInvalidArgument): a ticket-server set keeps no
  // settings, since no one of its stores is the place of record.

  // The row, or nullopt if absent.
  virtual Result<std::optional<SegmentTagRecord>> read_own_row(std::string_view key);
  // Every own row whose key starts with `prefix` (itself starting with '#'),
  // at most `max_rows`, ordered by key.
  virtual Result<std::vector<SegmentTagRecord>> list_own_rows(std::string_view prefix,
                                                              std::size_t max_rows);
  // Inserts the row; kAlreadyExists if present.
  virtual Status create_own_row(std::string_view key, std::int64_t start, std::int64_t step,
                                std::string_view description);
  // Compare and set: writes `description` and raises max_id by one (a
  // version: every change of the row raises it) only if the row's max_id is
  // still `version`. False, writing nothing, if another change came first;
  // kNotFound if the row is absent.
  virtual Result<bool> replace_own_row(std::string_view key, std::int64_t version,
                                       std::string_view description);
  virtual Result<SegmentRange> take_own_range(std::string_view key, std::int64_t increment);

  // The database server's clock (Unix time), read in one statement, for
  // checks of a node's clock against the store's. SQLite's is this host's.
  virtual Result<std::chrono::milliseconds> store_time();
};

// The longest key of an own row, in characters: the tag column's width.
inline constexpr std::size_t kMaxOwnRowCharacters = 128;

// Opens the store a URL names. The schema (sql/segments.sql) is created if
// missing, on first use. Several URLs separated by spaces name a
// ticket-server set (open_ticket_store), each store with its identity
// recorded by set_ticket_identity.
//   sqlite:///var/lib/snowid/segments.db   absolute path (three slashes)
//   sqlite://segments.db                   path relative to the working directory
//   postgresql://user@host:5432/db?...     libpq connection URI (also postgres://)
//   mysql://user@host:3306/db?...          MariaDB or MySQL (also mariadb://);
//                                          ?layout=leaf serves Meituan Leaf's
//                                          leaf_alloc table in place, ?password_file=PATH
// SQLite opens the file at once (kInvalidArgument / kUnavailable if it cannot).
// PostgreSQL and MySQL connect lazily: a database that is down makes calls
// fail with kUnavailable, never this function. kInvalidArgument for an
// unknown scheme or a URL that cannot be parsed.
Result<std::unique_ptr<SegmentStore>> open_segment_store(std::string_view url,
                                                         const SegmentStoreOptions& options = {});

// Independent stores serving every tag together, Flickr's ticket servers:
// store k hands out only numbers of its own residue class (its
// TicketIdentity), so the stores never hand out the same number, and a tag is
// served from whichever store answers. Numbers stay unique across stores but
// are ordered only within each store's ranges, which are taken from the
// stores in turn. Every member needs an identity
// (increment >= 2) with the same increment and a remainder of its own, at
// most `increment` members: checked here for the stores that answer, and for
// the others when they first answer (a store that disagrees is never used).
// A store that fails is skipped for a backoff that doubles up to 30 s.
Result<std::unique_ptr<SegmentStore>> open_ticket_store(
    std::vector<std::unique_ptr<SegmentStore>> members);

// The URL the CLI uses without --segment-store: the default state directory.
inline constexpr std::string_view kDefaultSegmentStoreUrl = "sqlite://.snowid/segments.db";

}  // namespace snowid
