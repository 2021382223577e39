// The segment store's statements, written once for SQLite and PostgreSQL
// (see src/sql/sql_connection.h; MariaDB/MySQL has its own dialect in
// mysql_segment_store.cc), and the choice of database by URL.
//
// No-repeat invariant, store side: a tag's max_id only grows, and a range is
// taken by the single statement kTakeRange, which raises max_id and returns
// the new value atomically. The caller owns [new max_id - increment,
// new max_id); no other caller can be handed any of it, whatever the
// interleaving of nodes, because the database serialises updates of one row.
// (MariaDB/MySQL, without UPDATE ... RETURNING, takes it in one transaction
// holding the row's lock: mysql_segment_store.cc.)
#include "snowid/ext/segment_store.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>

#include "database_url.h"
#include "segments_schema.h"
#include "sql_segment_store.h"

namespace snowid {
namespace {

using segment::SegmentStatements;
using sql::SqlConnection;
using sql::SqlRows;
using sql::SqlValue;

// $2 NULL: raise by the tag's configured step. The guard keeps max_id within
// 2^63-1 (SQLite would silently turn an overflowing sum into a float).
constexpr const char* kTakeRange =
    "UPDATE snowid_segments SET max_id = max_id + COALESCE($2, step), "
    "updated_at = CURRENT_TIMESTAMP "
    "WHERE tag = $1 AND max_id <= 9223372036854775807 - COALESCE($2, step) "
    "RETURNING max_id, step";
constexpr const char* kTagExists = "SELECT max_id FROM snowid_segments WHERE tag = $1";
constexpr const char* kCreateTag =
    "INSERT INTO snowid_segments (tag, max_id, step, description) VALUES ($1, $2, $3, $4) "
    "ON CONFLICT (tag) DO NOTHING RETURNING tag";
constexpr const char* kSetStep =
    "UPDATE snowid_segments SET step = $2, updated_at = CURRENT_TIMESTAMP WHERE tag = $1 "
    "RETURNING tag";
constexpr const char* kListTags =
    "SELECT tag, max_id, step, description, CAST(updated_at AS TEXT) FROM snowid_segments "
    "WHERE tag NOT LIKE '#%' ORDER BY tag LIMIT $1";

// A store's ticket identity is the row '#ticket' of snowid_segments: max_id
// holds the remainder, step the increment. No tag can start with '#'
// (validate_segment_tag), so the row never serves numbers, and existing
// tables need no new schema. It is written only into a table without tags,
// in one statement, and never changed.
constexpr const char* kReadIdentity =
    "SELECT step, max_id FROM snowid_segments WHERE tag = '#ticket'";
constexpr const char* kWriteIdentity =
    "INSERT INTO snowid_segments (tag, max_id, step, description) "
    "SELECT '#ticket', CAST($1 AS BIGINT), CAST($2 AS BIGINT), 'ticket-server identity: step = "
    "increment, max_id = remainder' "
    "WHERE NOT EXISTS (SELECT 1 FROM snowid_segments) ON CONFLICT (tag) DO NOTHING RETURNING tag";

// The key of that row: an own row's key (read_own_row) that no own-row call
// may write, since its max_id is the identity, not a version or a counter.
constexpr std::string_view kTicketIdentityKey = "#ticket";

// snowid's own rows (SegmentStore::read_own_row): rows of '#' keys beside
// the tags, created by kCreateTag and counted up by kTakeRange as tags are.
// A replacement raises max_id by one, so max_id is the row's version; the
// guard keeps it within 2^63-1 as kTakeRange's does.
constexpr const char* kReadOwnRow =
    "SELECT tag, max_id, step, description, CAST(updated_at AS TEXT) FROM snowid_segments "
    "WHERE tag = $1";
constexpr const char* kReplaceOwnRow =
    "UPDATE snowid_segments SET description = $3, max_id = max_id + 1, "
    "updated_at = CURRENT_TIMESTAMP "
    "WHERE tag = $1 AND max_id = $2 AND max_id < 9223372036854775807 RETURNING tag";

// The keys with a prefix are a range of the byte order (list_own_rows, with
// LIKE's wildcards out of the way): SQLite compares text byte by byte
// already, PostgreSQL only in the collation "C" (the database's may order
// "#a-b" between "#a" and "#a" + U+10FFFF, or ignore punctuation).
std::string list_own_rows_statement(std::string_view bytewise) {
  return fmt::format(
      "SELECT tag, max_id, step, description, CAST(updated_at AS TEXT) FROM snowid_segments "
      "WHERE tag{0} >= $1 AND tag{0} < $2 ORDER BY tag{0} LIMIT $3",
      bytewise);
}

// The two databases differ only in their clocks and in how they compare text.
SegmentStatements sqlite_statements() {
  return {kTakeRange,
          kTagExists,
          kCreateTag,
          kSetStep,
          kListTags,
          kReadIdentity,
          kWriteIdentity,
          kReadOwnRow,
          list_own_rows_statement(""),
          kReplaceOwnRow,
          "SELECT CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER)"};
}

SegmentStatements postgres_statements() {
  SegmentStatements statements = sqlite_statements();
  statements.list_own_rows = list_own_rows_statement(" COLLATE \"C\"");
  statements.store_time = "SELECT CAST(EXTRACT(EPOCH FROM clock_timestamp()) * 1000 AS BIGINT)";
  return statements;
}

constexpr std::size_t kMaxDescriptionBytes = 256;

Status validate_description(std::string_view description) {
  if (description.size() > kMaxDescriptionBytes) {
    return invalid_argument(fmt::format("description is {} bytes; at most {} allowed",
                                        description.size(), kMaxDescriptionBytes));
  }
  return {};
}

// Appends the UTF-8 of a code point (not a surrogate, at most U+10FFFF):
// a lead byte of `length` high ones (0xc0, 0xe0, 0xf0) and 6 bits per
// continuation byte.
void append_utf8(std::string& out, char32_t code_point) {
  if (code_point < 0x80) {
    out += static_cast<char>(code_point);
    return;
  }
  const std::size_t length = code_point < 0x800 ? 2 : code_point < 0x10000 ? 3 : 4;
  out += static_cast<char>((0xf00u >> length & 0xffu) | code_point >> (6 * (length - 1)));
  for (std::size_t i = length - 1; i-- > 0;) {
    out += static_cast<char>(0x80u | (code_point >> (6 * i) & 0x3fu));
  }
}

Status validate_step(std::int64_t step) {
  if (step < kMinSegmentStep || step > kMaxSegmentStep) {
    return invalid_argument(fmt::format("step must be between {} and {}, got {}", kMinSegmentStep,
                                        kMaxSegmentStep, step));
  }
  return {};
}

Result<std::int64_t> parse_column(const std::string& text, std::string_view column) {
  std::int64_t value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc{} || end != text.data() + text.size()) {
    return Error{ErrorCode::kUnavailable,
                 fmt::format("segment store returned a bad {}: '{}'", column, text)};
  }
  return value;
}

Error not_found(std::string_view tag) {
  return Error{ErrorCode::kNotFound, fmt::format("unknown segment tag '{}'", tag)};
}

Error own_row_not_found(std::string_view key) {
  return Error{ErrorCode::kNotFound, fmt::format("snowid keeps no row '{}' in this store", key)};
}

// The new row's fields, as create_tag and create_own_row take them.
Status validate_new_row(std::int64_t start, std::int64_t step, std::string_view description) {
  if (Status valid = validate_step(step); !valid.ok()) return valid;
  if (start < 0) return invalid_argument(fmt::format("start must be >= 0, got {}", start));
  return validate_description(description);
}

Status validate_increment(std::int64_t increment) {
  if (increment < kMinSegmentStep || increment > kMaxSegmentStep) {
    return invalid_argument(fmt::format("increment must be between {} and {}, got {}",
                                        kMinSegmentStep, kMaxSegmentStep, increment));
  }
  return {};
}

static_assert(kMaxOwnRowCharacters == kMaxSegmentTagCharacters,
              "validate_own_row_key counts up to the tag column's width");

// An own row's key that a call may write: not the ticket identity's.
Status validate_writable_own_row_key(std::string_view key) {
  if (Status valid = validate_own_row_key(key); !valid.ok()) return valid;
  if (key == kTicketIdentityKey) {
    return invalid_argument(fmt::format(
        "'{}' is the store's ticket identity, which only set_ticket_identity writes", key));
  }
  return {};
}

// The least string above every string that starts with `prefix` (well-formed
// UTF-8, '#' first): its last character raised by one, after dropping those
// at U+10FFFF. UTF-8's byte order is the order of code points, so the keys
// with the prefix are exactly those in [prefix, this).
std::string prefix_successor(std::string_view prefix) {
  std::string out(prefix);
  while (!out.empty()) {
    std::size_t start = out.size() - 1;
    while (start > 0 && (static_cast<unsigned char>(out[start]) & 0xc0) == 0x80) --start;
    const auto lead = static_cast<unsigned char>(out[start]);
    const std::size_t length = out.size() - start;
    char32_t code_point = length == 1 ? lead : lead & (0x7f >> length);
    for (std::size_t i = start + 1; i < out.size(); ++i) {
      code_point = code_point << 6 | (static_cast<unsigned char>(out[i]) & 0x3f);
    }
    out.resize(start);
    if (code_point == 0x10ffff) continue;
    code_point = code_point == 0xd7ff ? 0xe000 : code_point + 1;  // no surrogates
    append_utf8(out, code_point);
    return out;
  }
  return out;
}

class SqlSegmentStore final : public SegmentStore {
 public:
  SqlSegmentStore(std::unique_ptr<SqlConnection> connection, SegmentStatements statements)
      : connection_(std::move(connection)), statements_(std::move(statements)) {}

  const char* kind() const override { return connection_->kind(); }

  Status create_tag(std::string_view tag, std::int64_t start, std::int64_t step,
                    std::string_view description) override {
    if (Status valid = validate_segment_tag(tag); !valid.ok()) return valid;
    return insert_row(tag, start, step, description, "segment tag");
  }

  Status ping() override {
    auto rows = connection_->query("SELECT 1", {});
    if (!rows.ok()) return rows.error();
    return {};
  }

  Result<std::vector<SegmentTagRecord>> list_tags(std::size_t max_rows) override {
    const auto limit = static_cast<std::int64_t>(std::min(max_rows, kAllSegmentTags));
    auto rows = connection_->query(statements_.list_tags, {limit});
    if (!rows.ok()) return rows.error();
    return parse_records(*rows);
  }

  Status set_step(std::string_view tag, std::int64_t step) override {
    if (Status valid = validate_segment_tag(tag); !valid.ok()) return valid;
    if (Status valid = validate_step(step); !valid.ok()) return valid;
    auto rows = connection_->query(statements_.set_step, {std::string(tag), step});
    if (!rows.ok()) return rows.error();
    if (rows->empty()) return not_found(tag);
    return {};
  }

  Result<std::int64_t> max_id(std::string_view tag, std::size_t) override {
    if (Status valid = validate_segment_tag(tag); !valid.ok()) return valid.error();
    auto rows = connection_->query(statements_.tag_exists, {std::string(tag)});
    if (!rows.ok()) return rows.error();
    if (rows->empty()) return not_found(tag);
    if (rows->front().size() != 1) return bad_shape();
    return parse_column(rows->front().front(), "max_id");
  }

  Result<TicketIdentity> ticket_identity() override {
    auto rows = connection_->query(statements_.read_identity, {});
    if (!rows.ok()) return rows.error();
    if (rows->empty()) return TicketIdentity{};
    if (rows->front().size() != 2) return bad_shape();
    auto increment = parse_column(rows->front()[0], "ticket increment");
    if (!increment.ok()) return increment.error();
    auto remainder = parse_column(rows->front()[1], "ticket remainder");
    if (!remainder.ok()) return remainder.error();
    return TicketIdentity{*increment, *remainder};
  }

  Status set_ticket_identity(TicketIdentity identity) override {
    if (Status valid = validate_ticket_identity(identity); !valid.ok()) return valid;
    if (statements_.write_identity.empty()) {
      return invalid_argument(
          fmt::format("a {} store of this table layout cannot record a ticket identity", kind()));
    }
    auto rows =
        connection_->query(statements_.write_identity, {identity.remainder, identity.increment});
    if (!rows.ok()) return rows.error();
    if (!rows->empty()) return {};
    auto recorded = ticket_identity();
    if (!recorded.ok()) return recorded.error();
    if (*recorded == identity) return {};
    if (recorded->increment > 1) {
      return invalid_argument(
          fmt::format("this store is already ticket server {} of {}; an identity is never changed",
                      recorded->remainder, recorded->increment));
    }
    return invalid_argument(
        "this store has tags already: a ticket identity is recorded only in a store without "
        "tags, since the numbers it handed out would collide with another ticket server's");
  }

  Result<SegmentRange> take_range(std::string_view tag,
                                  std::optional<std::int64_t> increment) override {
    if (Status valid = validate_segment_tag(tag); !valid.ok()) return valid.error();
    if (increment) {
      if (Status valid = validate_increment(*increment); !valid.ok()) return valid.error();
    }
    return take(tag, increment, "segment tag", not_found);
  }

  // --- snowid's own rows ---------------------------------------------------
  // The tag calls' statements and rules, for '#' keys, in the same table.

  Result<std::optional<SegmentTagRecord>> read_tag(std::string_view tag) override {
    if (Status valid = validate_segment_tag(tag); !valid.ok()) return valid.error();
    // Leaf's layout has no own-row statement: its rows are read by listing.
    if (statements_.read_own_row.empty()) return SegmentStore::read_tag(tag);
    return read_row(tag);
  }

  Result<std::optional<SegmentTagRecord>> read_own_row(std::string_view key) override {
    if (Status kept = keeps_own_rows(); !kept.ok()) return kept.error();
    if (Status valid = validate_own_row_key(key); !valid.ok()) return valid.error();
    return read_row(key);
  }

  // One row by its key, tag or own row (read_own_row's statement).
  Result<std::optional<SegmentTagRecord>> read_row(std::string_view key) {
    auto rows = connection_->query(statements_.read_own_row, {std::string(key)});
    if (!rows.ok()) return rows.error();
    auto records = parse_records(*rows);
    if (!records.ok()) return records.error();
    if (records->empty()) return std::optional<SegmentTagRecord>();
    return std::optional<SegmentTagRecord>(std::move(records->front()));
  }

  Result<std::vector<SegmentTagRecord>> list_own_rows(std::string_view prefix,
                                                      std::size_t max_rows) override {
    if (Status kept = keeps_own_rows(); !kept.ok()) return kept.error();
    if (Status valid = validate_own_row_key(prefix); !valid.ok()) return valid.error();
    const auto limit = static_cast<std::int64_t>(std::min(max_rows, kAllSegmentTags));
    auto rows = connection_->query(statements_.list_own_rows,
                                   {std::string(prefix), prefix_successor(prefix), limit});
    if (!rows.ok()) return rows.error();
    return parse_records(*rows);
  }

  Status create_own_row(std::string_view key, std::int64_t start, std::int64_t step,
                        std::string_view description) override {
    if (Status kept = keeps_own_rows(); !kept.ok()) return kept;
    if (Status valid = validate_writable_own_row_key(key); !valid.ok()) return valid;
    return insert_row(key, start, step, description, "row");
  }

  // One statement compares and sets; only a miss reads the row to say why.
  Result<bool> replace_own_row(std::string_view key, std::int64_t version,
                               std::string_view description) override {
    if (Status kept = keeps_own_rows(); !kept.ok()) return kept.error();
    if (Status valid = validate_writable_own_row_key(key); !valid.ok()) return valid.error();
    if (Status valid = validate_description(description); !valid.ok()) return valid.error();
    auto rows = connection_->query(statements_.replace_own_row,
                                   {std::string(key), version, std::string(description)});
    if (!rows.ok()) return rows.error();
    if (!rows->empty()) return true;
    auto row = read_own_row(key);
    if (!row.ok()) return row.error();
    if (!row->has_value()) return own_row_not_found(key);
    if ((*row)->max_id == version) {
      return Error{ErrorCode::kUnavailable,
                   fmt::format("row '{}' has used up its versions (max_id {})", key, version)};
    }
    return false;
  }

  Result<SegmentRange> take_own_range(std::string_view key, std::int64_t increment) override {
    if (Status kept = keeps_own_rows(); !kept.ok()) return kept.error();
    if (Status valid = validate_writable_own_row_key(key); !valid.ok()) return valid.error();
    if (Status valid = validate_increment(increment); !valid.ok()) return valid.error();
    return take(key, increment, "row", own_row_not_found);
  }

  Result<std::chrono::milliseconds> store_time() override {
    auto rows = connection_->query(statements_.store_time, {});
    if (!rows.ok()) return rows.error();
    if (rows->size() != 1 || rows->front().size() != 1) return bad_shape();
    auto unix_ms = parse_column(rows->front().front(), "clock");
    if (!unix_ms.ok()) return unix_ms.error();
    return std::chrono::milliseconds{*unix_ms};
  }

 private:
  static Error bad_shape() {
    return Error{ErrorCode::kUnavailable, "segment store returned rows of an unexpected shape"};
  }

  // Rows of (tag, max_id, step, description, updated_at).
  static Result<std::vector<SegmentTagRecord>> parse_records(const SqlRows& rows) {
    std::vector<SegmentTagRecord> records;
    records.reserve(rows.size());
    for (const auto& row : rows) {
      if (row.size() != 5) return bad_shape();
      auto max_id = parse_column(row[1], "max_id");
      if (!max_id.ok()) return max_id.error();
      auto step = parse_column(row[2], "step");
      if (!step.ok()) return step.error();
      records.push_back(SegmentTagRecord{row[0], *max_id, *step, row[3], row[4]});
    }
    return records;
  }

  Status keeps_own_rows() const {
    if (!statements_.read_own_row.empty()) return {};
    return invalid_argument(fmt::format(
        "a {} store of Meituan Leaf's table layout keeps no tag settings or business-ID periods: "
        "Leaf's servers would load their '#' rows as tags (use snowid's table layout)",
        kind()));
  }

  // Inserts a row of a valid key (`what` names its kind in the refusal).
  Status insert_row(std::string_view key, std::int64_t start, std::int64_t step,
                    std::string_view description, std::string_view what) {
    if (Status valid = validate_new_row(start, step, description); !valid.ok()) return valid;
    auto rows = connection_->query(statements_.create_tag,
                                   {std::string(key), start, step, std::string(description)});
    if (!rows.ok()) return rows.error();
    if (rows->empty()) {
      return Error{ErrorCode::kAlreadyExists, fmt::format("{} '{}' already exists", what, key)};
    }
    return {};
  }

  // The no-repeat statement (see the top of this file) for a valid key and
  // increment; `what` names the key's kind, `absent` makes the error for a
  // key without a row.
  Result<SegmentRange> take(std::string_view key, std::optional<std::int64_t> increment,
                            std::string_view what, Error (*absent)(std::string_view)) {
    const SqlValue by = increment ? SqlValue(*increment) : SqlValue();
    auto rows = connection_->query(statements_.take_range, {std::string(key), by});
    if (!rows.ok()) return rows.error();
    if (rows->empty()) {
      auto exists = connection_->query(statements_.tag_exists, {std::string(key)});
      if (!exists.ok()) return exists.error();
      if (exists->empty()) return absent(key);
      return Error{ErrorCode::kUnavailable,
                   fmt::format("{} '{}' has used up its numbers (max_id {})", what, key,
                               exists->front().front())};
    }
    if (rows->front().size() != 2) return bad_shape();
    auto end = parse_column(rows->front()[0], "max_id");
    if (!end.ok()) return end.error();
    auto configured = parse_column(rows->front()[1], "step");
    if (!configured.ok()) return configured.error();
    const std::int64_t taken = increment.value_or(*configured);
    return SegmentRange{*end - taken, *end, *configured};
  }

  std::unique_ptr<SqlConnection> connection_;
  SegmentStatements statements_;
};

}  // namespace

std::unique_ptr<SegmentStore> segment::make_sql_segment_store(
    std::unique_ptr<SqlConnection> connection, SegmentStatements statements) {
  return std::make_unique<SqlSegmentStore>(std::move(connection), std::move(statements));
}

Status validate_ticket_identity(TicketIdentity identity) {
  if (identity.increment < 1 || identity.increment > kMaxTicketIncrement ||
      identity.remainder < 0 || identity.remainder >= identity.increment) {
    return invalid_argument(
        fmt::format("a ticket identity needs 1 <= increment <= {} and 0 <= remainder < "
                    "increment, got increment {} and remainder {}",
                    kMaxTicketIncrement, identity.increment, identity.remainder));
  }
  return {};
}

Result<TicketIdentity> ticket_identity_from_offset(std::int64_t increment, std::int64_t offset) {
  if (increment < 1 || increment > kMaxTicketIncrement || offset < 0 || offset > increment) {
    return invalid_argument(fmt::format(
        "a ticket server needs 1 <= increment <= {} and an offset from 0 to increment, got "
        "increment {} and offset {}: the offset is either snowid's remainder (0..increment-1) or "
        "MySQL's auto_increment_offset (1..increment), the numbers n with n % increment == "
        "offset % increment (MySQL's offsets 1 and 2 of 2 are remainders 1 and 0)",
        kMaxTicketIncrement, increment, offset));
  }
  return TicketIdentity{increment, offset % increment};
}

Result<std::int64_t> SegmentStore::max_id(std::string_view tag, std::size_t) {
  auto rows = list_tags(kAllSegmentTags);
  if (!rows.ok()) return rows.error();
  for (const SegmentTagRecord& row : *rows) {
    if (row.tag == tag) return row.max_id;
  }
  return not_found(tag);
}

Status SegmentStore::set_ticket_identity(TicketIdentity) {
  return invalid_argument(fmt::format("a {} store cannot record a ticket identity", kind()));
}

namespace {
Error keeps_no_own_rows(const SegmentStore& store) {
  return invalid_argument(fmt::format(
      "a {} store keeps no tag settings or business-ID periods (they need one store of record: "
      "a single SQLite, PostgreSQL or MariaDB/MySQL store of snowid's table layout)",
      store.kind()));
}
}  // namespace

Result<std::optional<SegmentTagRecord>> SegmentStore::read_tag(std::string_view tag) {
  if (Status valid = validate_segment_tag(tag); !valid.ok()) return valid.error();
  auto rows = list_tags(kAllSegmentTags);
  if (!rows.ok()) return rows.error();
  for (auto& row : *rows) {
    if (row.tag == tag) return std::optional<SegmentTagRecord>(std::move(row));
  }
  return std::optional<SegmentTagRecord>();
}

Result<std::optional<SegmentTagRecord>> SegmentStore::read_own_row(std::string_view) {
  return keeps_no_own_rows(*this);
}
Result<std::vector<SegmentTagRecord>> SegmentStore::list_own_rows(std::string_view, std::size_t) {
  return keeps_no_own_rows(*this);
}
Status SegmentStore::create_own_row(std::string_view, std::int64_t, std::int64_t,
                                    std::string_view) {
  return keeps_no_own_rows(*this);
}
Result<bool> SegmentStore::replace_own_row(std::string_view, std::int64_t, std::string_view) {
  return keeps_no_own_rows(*this);
}
Result<SegmentRange> SegmentStore::take_own_range(std::string_view, std::int64_t) {
  return keeps_no_own_rows(*this);
}
Result<std::chrono::milliseconds> SegmentStore::store_time() { return keeps_no_own_rows(*this); }

Result<std::unique_ptr<SegmentStore>> open_segment_store(std::string_view url,
                                                         const SegmentStoreOptions& options) {
  if (has_control_character(url)) {
    return invalid_argument(
        "a segment store URL may not hold a control character (tab, newline, NUL); separate "
        "ticket-server URLs with spaces");
  }
  if (url.find(' ') != std::string_view::npos) {
    std::vector<std::unique_ptr<SegmentStore>> members;
    for (std::size_t at = 0; at < url.size();) {
      const std::size_t space = std::min(url.find(' ', at), url.size());
      if (space > at) {
        auto member = open_segment_store(url.substr(at, space - at), options);
        if (!member.ok()) return member.error();
        members.push_back(std::move(*member));
      }
      at = space + 1;
    }
    return open_ticket_store(std::move(members));
  }
  constexpr std::string_view kSqlite = "sqlite://";
  if (url.starts_with(kSqlite)) {
    const std::string path(url.substr(kSqlite.size()));
    if (path.empty()) {
      return invalid_argument(
          "sqlite:// needs a file: sqlite:///absolute/path.db or sqlite://relative/path.db");
    }
    auto connection = segment::open_sqlite(path, options.call_timeout);
    if (!connection.ok()) return connection.error();
    return std::unique_ptr<SegmentStore>(
        segment::make_sql_segment_store(std::move(*connection), sqlite_statements()));
  }
  if (url.starts_with("postgresql://") || url.starts_with("postgres://")) {
    auto connection = sql::open_postgres(std::string(url), options.call_timeout,
                                        {"snowid_segments", segment::kSegmentsSchemaSql});
    if (!connection.ok()) return connection.error();
    return std::unique_ptr<SegmentStore>(
        segment::make_sql_segment_store(std::move(*connection), postgres_statements()));
  }
  if (url.starts_with("mysql://") || url.starts_with("mariadb://")) {
    return segment::open_mysql_segment_store(url, options);
  }
  // Only a scheme is echoed: the rest may hold a password (and a piece of a
  // list split at a space may be one).
  const auto scheme_end = url.find("://");
  constexpr std::string_view kForms =
      "use sqlite:///path/file.db, sqlite://relative.db, postgresql://user@host:port/db or "
      "mysql://user@host:port/db, or several separated by spaces for a ticket-server set";
  if (scheme_end == std::string_view::npos) {
    return invalid_argument(fmt::format("a segment store URL has no scheme: {}", kForms));
  }
  return invalid_argument(
      fmt::format("unknown segment store scheme '{}': {}", url.substr(0, scheme_end), kForms));
}

}  // namespace snowid
