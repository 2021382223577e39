// The segment store on MariaDB or MySQL: the URL, the two table layouts it
// serves and its dialect of the store's statements.
//
//   mysql://user[:password]@host[:port]/database[?param=value&...]   (also mariadb://)
//
// Parameters:
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
#include <fstream>
#include <iterator>
#include <optional>

#include "database_url.h"
#include "mariadb_connection.h"
#include "percent_decode.h"
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
  };
}

Error bad_url(std::string_view why) {
  return Error{ErrorCode::kInvalidArgument,
               fmt::format("bad MySQL URL: {} (mysql://user[:password]@host[:port]/database"
                           "[?layout=leaf&table=NAME&password_file=PATH&ssl_ca=PATH])",
                           why)};
}

// `text` with its %XX escapes decoded; `what` names the part of the URL in
// the error.
Result<std::string> percent_decoded(std::string_view text, std::string_view what) {
  std::optional<std::string> decoded = percent_decode(text);
  if (!decoded) return bad_url(fmt::format("bad percent-encoding in the {}", what));
  return std::move(*decoded);
}

bool plain_identifier(std::string_view name) {
  return !name.empty() && name.size() <= 64 && std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
  });
}

Result<std::string> read_password_file(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) return bad_url(fmt::format("cannot read password_file {}", path));
  std::string password((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  if (!password.empty() && password.back() == '\n') password.pop_back();
  if (!password.empty() && password.back() == '\r') password.pop_back();
  if (password.empty()) return bad_url(fmt::format("password_file {} is empty", path));
  return password;
}

// user[:password] into `connection`; `password_in_url` says whether a
// password was given.
Status read_user_info(std::string_view info, MariadbOptions& connection, bool& password_in_url) {
  const auto colon = info.find(':');
  auto user = percent_decoded(info.substr(0, colon), "user");
  if (!user.ok()) return user.error();
  connection.user = *user;
  if (colon != std::string_view::npos) {
    auto password = percent_decoded(info.substr(colon + 1), "password");
    if (!password.ok()) return password.error();
    connection.password = *password;
    password_in_url = true;
  }
  return {};
}

// host[:port] or [v6-address][:port] into `connection`.
Status read_host_and_port(std::string_view authority, MariadbOptions& connection) {
  std::string_view port_text;
  if (authority.starts_with('[')) {
    const auto close = authority.find(']');
    if (close == std::string_view::npos) return bad_url("unclosed [ in the host");
    connection.host = std::string(authority.substr(1, close - 1));
    if (close + 1 < authority.size()) {
      if (authority[close + 1] != ':') return bad_url("bad host");
      port_text = authority.substr(close + 2);
    }
  } else {
    const auto colon = authority.find(':');
    connection.host = std::string(authority.substr(0, colon));
    if (colon != std::string_view::npos) port_text = authority.substr(colon + 1);
  }
  if (connection.host.empty()) return bad_url("no host");
  if (!port_text.empty() || authority.ends_with(':')) {
    unsigned int port = 0;
    for (char c : port_text) {
      if (c < '0' || c > '9' || port > 65535) return bad_url("bad port");
      port = port * 10 + static_cast<unsigned int>(c - '0');
    }
    if (port == 0 || port > 65535) return bad_url("bad port");
    connection.port = port;
  }
  return {};
}

// The URL's parameters that pick the table and the password file, before
// they are checked together.
struct TableParameters {
  std::string layout_name = "snowid";
  std::string table;
  std::string password_file;
};

// The parameters after the '?' (ssl_ca goes straight into `connection`).
Result<TableParameters> read_parameters(std::string_view query, MariadbOptions& connection) {
  TableParameters out;
  while (!query.empty()) {
    const std::string_view pair = query.substr(0, query.find('&'));
    query.remove_prefix(std::min(query.size(), pair.size() + 1));
    const auto equals = pair.find('=');
    const std::string_view name = pair.substr(0, equals);
    auto value = percent_decoded(
        equals == std::string_view::npos ? std::string_view() : pair.substr(equals + 1),
        "parameters");
    if (!value.ok()) return value.error();
    if (name == "layout") {
      out.layout_name = *value;
    } else if (name == "table") {
      out.table = *value;
    } else if (name == "password_file") {
      out.password_file = *value;
    } else if (name == "ssl_ca") {
      if (value->empty()) return bad_url("ssl_ca needs a CA file");
      connection.ssl_ca = *value;
    } else {
      return bad_url(fmt::format("unknown parameter '{}'", name.substr(0, 32)));
    }
  }
  return out;
}

// The whole URL into `connection` and the table parameters, checked in the
// order the URL is written.
Result<TableParameters> read_url(std::string_view url, MariadbOptions& connection) {
  const std::optional<DatabaseUrlAuthority> parts = database_url_authority(url);
  if (!parts || !parts->has_path()) return bad_url("no /database");
  bool password_in_url = false;
  std::size_t host = parts->begin;
  if (parts->has_user_info()) {
    const std::string_view info = url.substr(parts->begin, parts->last_at - parts->begin);
    if (Status user = read_user_info(info, connection, password_in_url); !user.ok()) {
      return user.error();
    }
    host = parts->last_at + 1;
  }
  if (connection.user.empty()) return bad_url("no user");
  Status address = read_host_and_port(url.substr(host, parts->end - host), connection);
  if (!address.ok()) return address.error();

  const std::string_view rest = url.substr(parts->end + 1);
  const auto query_start = rest.find('?');
  auto database = percent_decoded(rest.substr(0, query_start), "database");
  if (!database.ok()) return database.error();
  if (database->empty()) return bad_url("no database");
  connection.database = *database;

  auto parameters = query_start == std::string_view::npos
                        ? Result<TableParameters>(TableParameters{})
                        : read_parameters(rest.substr(query_start + 1), connection);
  if (!parameters.ok()) return parameters.error();
  if (!parameters->password_file.empty()) {
    if (password_in_url) return bad_url("a password both in the URL and in password_file");
    auto password = read_password_file(parameters->password_file);
    if (!password.ok()) return password.error();
    connection.password = *password;
  }
  return parameters;
}

// The table layout the parameters name; sets how `connection` treats a
// missing table.
Result<TableLayout> table_layout(const TableParameters& parameters, MariadbOptions& connection) {
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

Result<MariadbOptions> read_mysql_url(std::string_view url) {
  MariadbOptions connection;
  auto parameters = read_url(url, connection);
  if (!parameters.ok()) return parameters.error();
  if (parameters->layout_name != "snowid" || !parameters->table.empty()) {
    return bad_url("layout= and table= choose segment_store's table, not this one");
  }
  return connection;
}

Result<std::unique_ptr<SegmentStore>> open_mysql_segment_store(std::string_view url,
                                                               const SegmentStoreOptions& options) {
  MariadbOptions connection;
  connection.timeout = options.call_timeout;
  auto parameters = read_url(url, connection);
  if (!parameters.ok()) return parameters.error();
  auto layout = table_layout(*parameters, connection);
  if (!layout.ok()) return layout.error();
  connection.table = layout->table;
  return make_sql_segment_store(open_mariadb(std::move(connection)), mysql_statements(*layout));
}

}  // namespace snowid::segment
