// The SQL coordinators: a SqlClaim (sql_claim.cc) driven by the leased
// coordinator (leased_coordinator.cc), and `snowid cluster`'s view of the
// table, once for both dialects.
#include "sql_coordinator.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cstdlib>
#include <map>

#include "cluster_admin.h"
#include "leased_coordinator.h"
#include "sql_claim.h"
#include "sql_client.h"
#include "sql_dialect.h"

namespace snowid {
namespace {

using sql::SqlValue;
using std::chrono::milliseconds;

// $1 cluster: every node id's row with its claim (1 if its lease runs), the
// record, the lease left (ms) and H.
constexpr const char* kListClaims =
    "SELECT node_id, CASE WHEN holder IS NOT NULL AND lease_until > {now} THEN 1 ELSE 0 END, "
    "COALESCE(record, ''), lease_until - {now}, reservation FROM snowid_node_claims "
    "WHERE cluster = $1 AND node_id >= 0 ORDER BY node_id";
// $1 cluster, $2 node id: the record of its live claim.
constexpr const char* kLiveClaim =
    "SELECT COALESCE(record, '') FROM snowid_node_claims WHERE cluster = $1 AND node_id = $2 "
    "AND holder IS NOT NULL AND lease_until > {now}";
constexpr const char* kEvict =
    "UPDATE snowid_node_claims SET holder = NULL, record = NULL, lease_until = 0, "
    "writes = writes + 1 WHERE cluster = $1 AND node_id = $2";

Result<std::unique_ptr<coord::SqlClient>> client_of(const coord::SqlDialect& dialect,
                                                    const SqlStoreOptions& options) {
  return coord::connect_checked(options, [&dialect](const SqlStoreOptions& checked) {
    return coord::SqlClient::connect(dialect, checked);
  });
}

std::int64_t number(const std::string& text) { return std::strtoll(text.c_str(), nullptr, 10); }

template <typename Options>
Result<std::unique_ptr<Coordinator>> make_sql(const coord::SqlDialect& dialect,
                                              const Options& options) {
  Options shown = options;
  if (shown.endpoints_text.empty()) {
    shown.endpoints_text = hide_sql_password(fmt::format("{}", fmt::join(options.endpoints, ",")));
  }
  return coord::make_leased_coordinator<coord::SqlClaim>(dialect.name, shown,
                                                         client_of(dialect, options));
}

Result<std::vector<ClusterNode>> list_sql(const coord::SqlDialect& dialect,
                                          const SqlStoreOptions& options) {
  auto client = client_of(dialect, options);
  if (!client.ok()) return client.error();
  auto rows = (*client)->query(kListClaims, {options.cluster});
  if (!rows.ok()) return rows.error();
  std::map<std::uint64_t, ClusterNode> nodes;
  for (const auto& row : *rows) {
    const auto id = row.size() == 5 ? coord::parse_node_id(row[0]) : std::nullopt;
    const bool claimed = id && row[1] == "1";
    const milliseconds reservation{id ? number(row[4]) : 0};
    if (!claimed && reservation.count() <= 0) continue;  // a row no holder wrote H to
    ClusterNode& node = nodes[*id];
    node.node_id = *id;
    node.reservation = reservation;
    if (claimed) {
      coord::set_claimed_by(node, row[2]);
      node.lease_time_left = std::chrono::seconds{number(row[3]) / 1000};
    }
  }
  return coord::cluster_rows(std::move(nodes));
}

Status release_sql(const coord::SqlDialect& dialect, const SqlStoreOptions& options,
                   std::uint64_t node_id, bool force) {
  auto client = client_of(dialect, options);
  if (!client.ok()) return client.error();
  const SqlValue id = static_cast<std::int64_t>(node_id);
  auto live = (*client)->query(kLiveClaim, {options.cluster, id});
  if (!live.ok()) return live.error();
  if (live->empty() || live->front().empty()) return {};
  if (!force) return coord::claim_is_alive(node_id, live->front()[0], "lease");
  auto evicted = (*client)->query(kEvict, {options.cluster, id});
  if (!evicted.ok()) return evicted.error();
  return {};
}

}  // namespace

Result<std::unique_ptr<Coordinator>> make_postgres_coordinator(const PostgresOptions& options) {
  return make_sql(coord::kPostgresDialect, options);
}

Result<std::vector<ClusterNode>> list_cluster(const PostgresOptions& options) {
  return list_sql(coord::kPostgresDialect, options);
}

Status release_node_id(const PostgresOptions& options, std::uint64_t node_id, bool force) {
  return release_sql(coord::kPostgresDialect, options, node_id, force);
}

Result<std::unique_ptr<Coordinator>> make_mysql_coordinator(const MysqlOptions& options) {
  return make_sql(coord::kMysqlDialect, options);
}

Result<std::vector<ClusterNode>> list_cluster(const MysqlOptions& options) {
  return list_sql(coord::kMysqlDialect, options);
}

Status release_node_id(const MysqlOptions& options, std::uint64_t node_id, bool force) {
  return release_sql(coord::kMysqlDialect, options, node_id, force);
}

}  // namespace snowid
