// A snowid cluster on a SQL store (PostgreSQL, MariaDB) as an operator
// prepares it: the claims table applied from its file in sql/, and the
// cluster marked new to the database by its created row (node id -1,
// reservation 0), so that its first nodes need not start ahead; and its
// rows read back as `snowid cluster list` reads them.
#pragma once

#include <gtest/gtest.h>

#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include "snowid/layout.h"
#include "sql_coordinator.h"

namespace snowid::test {

// Runs the file `schema_path` and then the marker row of `cluster` through
// `sql`; false if the file is empty or missing or a statement failed.
inline bool mark_new_sql_cluster(const std::function<bool(const std::string&)>& sql,
                                 const std::string& schema_path, const std::string& cluster) {
  std::ifstream schema(schema_path);
  std::stringstream text;
  text << schema.rdbuf();
  return !text.str().empty() && sql(text.str()) &&
         sql("INSERT INTO snowid_node_claims (cluster, node_id, reservation) VALUES ('" +
             cluster + "', -1, 0)");
}

// The rows of `cluster` (twitter layout) in the database at `url`, through
// `Options` (PostgresOptions, MysqlOptions); none, with a failure reported,
// if they cannot be read.
template <typename Options>
std::vector<ClusterNode> list_sql_cluster(const std::string& url, const std::string& cluster) {
  Options options;
  options.endpoints = {url};
  options.cluster = cluster;
  options.layout = *preset("twitter");
  auto nodes = list_cluster(options);
  EXPECT_TRUE(nodes.ok()) << nodes.error().message;
  return nodes.ok() ? *nodes : std::vector<ClusterNode>{};
}

}  // namespace snowid::test
