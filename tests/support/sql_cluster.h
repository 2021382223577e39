// A snowid cluster on a SQL store (PostgreSQL, MariaDB) as an operator
// prepares it: the claims table applied from its file in sql/, and the
// cluster marked new to the database by its created row (node id -1,
// reservation 0), so that its first nodes need not start ahead.
#pragma once

#include <fstream>
#include <functional>
#include <sstream>
#include <string>

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

}  // namespace snowid::test
