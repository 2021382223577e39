// The segment store on MariaDB or MySQL: the URL, the two table layouts it
// serves and its dialect of the store's statements.
//
//   mysql://user[:password]@host[:port]/database[?param=value&...]   (also mariadb://)
//
// The URL is read by src/sql/mysql_url.cc. Parameters:
//   layout=snowid         (default) snowid's table snowid_segments, created if
//                         missing (sql/segments.mysql.sql)
//   layout=leaf           Meituan Leaf's table leaf_alloc(biz_tag, max_id, step,
//                         description, update_time), served in place: never
//                         created or altered; a connection refuses to go on if
//                         it is missing
//   table=NAME            with layout=leaf, the table's name if not leaf_alloc
//   password_file=PATH    the password, read once when the store is opened (a
//                         final newline is not part of it); not with a password
//                         in the URL
//   ssl_ca=PATH           require TLS and verify the server's certificate
//                         against this CA file (chain and host name); without
//                         it the connection is not encrypted
// MYSQL_PWD and option files (my.cnf) are not read. Port 3306 by default.
//
// No-repeat invariant, MySQL side: MariaDB has no UPDATE ... RETURNING, so a
// range is taken, as Leaf takes it, in ONE transaction sent in one round trip:
//   START TRANSACTION;
//   UPDATE t SET max_id = max_id + inc WHERE tag = ? AND max_id <= 2^63-1 - inc;
//   SELECT max_id, step FROM t WHERE tag = ? AND ROW_COUNT() = 1;
//   COMMIT
// The UPDATE takes the row's exclusive InnoDB lock and keeps it to COMMIT,
// so the SELECT reads the max_id this transaction wrote and no other node's:
// the caller owns [max_id - inc, max_id). Another node's UPDATE of the row
// waits for the lock and then raises the committed value, so their ranges
// cannot overlap. The SELECT returns a row only if the UPDATE changed one
// (ROW_COUNT() of the statement before it), so nothing taken is not mistaken
// for a range. If the connection fails anywhere before COMMIT is
// acknowledged, the server rolls the transaction back or commits it; either
// way the caller hands out nothing from that call (a range taken that way is
// skipped, never repeated).
//
// Leaf's semantics, checked against its source (leaf-core SegmentIDGenImpl
// and IDAllocMapper): Leaf runs `UPDATE leaf_alloc SET max_id = max_id + step
// WHERE biz_tag = #{tag}` (or `+ #{step}` for its grown steps) then `SELECT
// biz_tag, max_id, step FROM leaf_alloc WHERE biz_tag = #{tag}` in one
// transaction, and serves [max_id - step, max_id): its Segment starts at value
// max_id - step and hands out a value while value < max. So a leaf_alloc row's
// max_id is, as in snowid_segments, the first number no node has taken, and
// Leaf nodes and snowid nodes may take ranges from the same rows at the same
// time without sharing a number.
//
// Tags: Leaf allows any biz_tag of up to 128 characters, and snowid's rule
// (snowid/segment_tag.h) is that, but for control characters and a '#'
// first: a Leaf row with such a biz_tag is listed but refused
// (kInvalidArgument naming the rule) when asked for numbers.
#include <fmt/format.h>

#include <algorithm>

#include "mariadb_connection.h"
#include "segments_schema.h"
#include "sql_segment_store.h"

namespace snowid::segment {
namespace {

// Where a layout keeps a tag's fields.
struct TableLayout {
  std::string table;
  std::string tag_column;
  std::string description;  // an expression: Leaf's description may be NULL
  std::string updated_column;
  bool leaf = false;
};

SegmentStatements mysql_statements(const TableLayout& layout) {
  const std::string t = fmt::format("`{}`", layout.table);
  const std::string& tag = layout.tag_column;
  const std::string& updated = layout.updated_column;
  return SegmentStatements{
      .take_range = fmt::format(
          "START TRANSACTION; "
          "UPDATE {0} SET max_id = max_id + COALESCE($2, step), {2} = CURRENT_TIMESTAMP "
          "WHERE {1} = $1 AND max_id <= 9223372036854775807 - COALESCE($2, step); "
          "SELECT max_id, step FROM {0} WHERE {1} = $1 AND ROW_COUNT() = 1; "
          "COMMIT",
          t, tag, updated),
      .tag_exists = fmt::format("SELECT max_id FROM {} WHERE {} = $1", t, tag),
      // ON DUPLICATE KEY UPDATE of a column to itself changes no row: ROW_COUNT() 0.
      .create_tag =
          fmt::format("INSERT INTO {0} ({1}, max_id, step, description) VALUES ($1, $2, $3, $4) "
                      "ON DUPLICATE KEY UPDATE {1} = {1}; "
                      "SELECT 1 FROM DUAL WHERE ROW_COUNT() = 1",
                      t, tag),
      .set_step = fmt::format("UPDATE {0} SET step = $2, {2} = CURRENT_TIMESTAMP WHERE {1} = $1; "
                              "SELECT 1 FROM {0} WHERE {1} = $1",
                              t, tag, updated),
      .list_tags =
          fmt::format("SELECT {1}, max_id, step, {2}, COALESCE(CAST({3} AS CHAR), '') FROM {0} "
                      "WHERE {1} NOT LIKE '#%' ORDER BY {1} LIMIT $1",
                      t, tag, layout.description, updated),
      .read_identity = fmt::format("SELECT step, max_id FROM {} WHERE {} = '#ticket'", t, tag),
      // Only snowid's own table records a ticket identity: in Leaf's, Leaf
      // servers would take the row for a tag.
      .write_identity =
          layout.leaf ? std::string()
                      : fmt::format("INSERT INTO {0} ({1}, max_id, step, description) "
                                    "SELECT '#ticket', $1, $2, 'ticket-server identity: step = "
                                    "increment, max_id = remainder' FROM DUAL "
                                    "WHERE NOT EXISTS (SELECT 1 FROM {0}) "
                                    "ON DUPLICATE KEY UPDATE {1} = {0}.{1}; "
                                    "SELECT 1 FROM DUAL WHERE ROW_COUNT() = 1",
                                    t, tag),
      // snowid's own rows ('#' keys): only in snowid's table, for the same
      // reason. A row is replaced by one UPDATE, atomic under the row's lock
      // like take_range's, raising max_id (the row's version) by one. The
      // keys with a prefix are [$1, $2) in the column's code point order;
      // since utf8mb4_bin compares with trailing spaces ignored ('#a' =
      // '#a '), their first characters are compared byte by byte as well.
      .read_own_row = layout.leaf ? std::string()
                                  : fmt::format("SELECT {1}, max_id, step, description, "
                                                "CAST({2} AS CHAR) FROM {0} WHERE {1} = $1",
                                                t, tag, updated),
      .list_own_rows =
          fmt::format("SELECT {1}, max_id, step, description, CAST({2} AS CHAR) FROM {0} "
                      "WHERE {1} >= $1 AND {1} < $2 "
                      "AND CAST(LEFT({1}, CHAR_LENGTH($1)) AS BINARY) = CAST($1 AS BINARY) "
                      "ORDER BY {1} LIMIT $3",
                      t, tag, updated),
      .replace_own_row = fmt::format(
          "UPDATE {0} SET description = $3, max_id = max_id + 1, {2} = CURRENT_TIMESTAMP "
          "WHERE {1} = $1 AND max_id = $2 AND max_id < 9223372036854775807; "
          "SELECT 1 FROM DUAL WHERE ROW_COUNT() = 1",
          t, tag, updated),
      .store_time = "SELECT CAST(UNIX_TIMESTAMP(NOW(3)) * 1000 AS SIGNED)",
  };
}

constexpr std::string_view kUsage =
    "mysql://user[:password]@host[:port]/database"
    "[?layout=leaf&table=NAME&password_file=PATH&ssl_ca=PATH]";
constexpr std::string_view kTableParameters[] = {"layout", "table"};

Error bad_url(std::string_view why) { return sql::bad_mysql_url(why, kUsage); }

bool plain_identifier(std::string_view name) {
  return !name.empty() && name.size() <= 64 && std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
  });
}

// The URL's parameters that pick the table (the last of each name counts).
struct TableParameters {
  std::string layout_name = "snowid";
  std::string table;
};

TableParameters table_parameters(const sql::MysqlUrl& url) {
  TableParameters out;
  for (const auto& [name, value] : url.own_parameters) {
    (name == "layout" ? out.layout_name : out.table) = value;
  }
  return out;
}

// The table layout the parameters name; sets how `connection` treats a
// missing table.
Result<TableLayout> table_layout(const TableParameters& parameters,
                                 sql::MariadbOptions& connection) {
  if (parameters.layout_name == "snowid") {
    if (!parameters.table.empty())
      return bad_url("table= is for layout=leaf; snowid's table is snowid_segments");
    connection.create_table_sql = kSegmentsMysqlSchemaSql;
    return TableLayout{"snowid_segments", "tag", "description", "updated_at", false};
  }
  if (parameters.layout_name == "leaf") {
    const std::string table = parameters.table.empty() ? "leaf_alloc" : parameters.table;
    if (!plain_identifier(table)) {
      return bad_url("table must be 1 to 64 letters, digits or '_'");
    }
    connection.missing_table_hint =
        "layout=leaf serves an existing Meituan Leaf table and never creates one";
    return TableLayout{table, "biz_tag", "COALESCE(description, '')", "update_time", true};
  }
  return bad_url(
      fmt::format("layout must be snowid or leaf, got '{}'", parameters.layout_name.substr(0, 32)));
}

}  // namespace

Result<std::unique_ptr<SegmentStore>> open_mysql_segment_store(std::string_view url,
                                                               const SegmentStoreOptions& options) {
  auto read = sql::read_mysql_url(url, kTableParameters, kUsage);
  if (!read.ok()) return read.error();
  sql::MariadbOptions& connection = read->connection;
  connection.timeout = options.call_timeout;
  auto layout = table_layout(table_parameters(*read), connection);
  if (!layout.ok()) return layout.error();
  connection.table = layout->table;
  return make_sql_segment_store(sql::open_mariadb(std::move(connection)), mysql_statements(*layout));
}

}  // namespace snowid::segment
