// Node ids leased from a SQL database the team already runs: PostgreSQL
// (coordinator = "postgres") and MariaDB/MySQL (coordinator = "mysql"), with
// the same fenced reservation as etcd.
//
// One table, snowid_node_claims (sql/node_claims.sql, sql/node_claims.mysql.sql),
// one row per (cluster, node id): the holder (a claim identity, random per
// claim), its record (ClaimRecord JSON), the lease's end by the DATABASE's
// clock (Unix ms), and the reservation H (Unix ms), which outlives every
// holder. The row of node id -1 holds the cluster's created marker in its
// reservation column. Every write under a claim is an UPDATE conditional on
// the holder, so a node that lost its id can never raise the reservation of
// the next holder. The invariant is stated in src/coord/sql_claim.cc.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "lease_options.h"
#include "snowid/coordinator.h"
#include "snowid/error.h"

namespace snowid {

// What both SQL stores are configured with.
struct SqlStoreOptions : LeaseOptions {
  // The database, tried in order: each a URL (postgresql://..., mysql://...),
  // or HOST:PORT, which takes the user and password below and the store's
  // default database.
  std::vector<std::string> endpoints;
  // The endpoints as the operator wrote them, shown with the password hidden.
  std::string endpoints_text;
  // Override the URL's user and password when set (`snowid cluster --user`).
  std::string user;
  std::string password;
};

struct PostgresOptions : SqlStoreOptions {};
struct MysqlOptions : SqlStoreOptions {};

// A postgresql:// (or postgres://) URL, libpq's own form (several hosts
// "h1:p1,h2:p2" in one URL, target_session_attrs, sslmode, passfile ...), or
// HOST:PORT[,HOST:PORT...]. kInvalidArgument saying why not.
Result<std::vector<std::string>> parse_postgres_endpoints(std::string_view text);
// A mysql:// (or mariadb://) URL, segment_store's form
// (mysql://user[:password]@host[:port]/database[?password_file=PATH&ssl_ca=PATH]),
// where host[:port] may be several, comma-separated: one endpoint per host, each
// with the URL's user, password, database and parameters, tried in order; or
// HOST:PORT[,HOST:PORT...]. kInvalidArgument saying why not.
Result<std::vector<std::string>> parse_mysql_endpoints(std::string_view text);

// `text` with the password of each URL in it replaced by "***".
std::string hide_sql_password(std::string_view text);

// Check the options and connect lazily; claim() does the first request.
Result<std::unique_ptr<Coordinator>> make_postgres_coordinator(const PostgresOptions& options);
Result<std::unique_ptr<Coordinator>> make_mysql_coordinator(const MysqlOptions& options);

// `snowid cluster list`: every node id with a claim or a reservation.
Result<std::vector<ClusterNode>> list_cluster(const PostgresOptions& options);
Result<std::vector<ClusterNode>> list_cluster(const MysqlOptions& options);

// Ends the claim of `node_id` (the reservation stays). Refuses with
// kUnavailable while its lease is alive unless `force`; its holder then
// finds the claim gone at its next renewal and stops issuing. Ok if there
// is no live claim.
Status release_node_id(const PostgresOptions& options, std::uint64_t node_id, bool force);
Status release_node_id(const MysqlOptions& options, std::uint64_t node_id, bool force);

}  // namespace snowid
