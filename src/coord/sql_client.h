// A SQL store's client for the claims (sql_claim.h) and `snowid cluster`:
// the endpoints in order, each a lazy connection, every statement retried on
// the next endpoint (or anew on the same one) after a failure, and the
// request counters.
//
// Retrying is safe because every statement of the claim is idempotent for its
// sender: a conditional UPDATE applied once already matches again on the same
// holder; a raise takes GREATEST; a release applied once matches no row the
// second time. So a lost connection, a lost answer, a serialization failure
// or a deadlock (SQLSTATE 40001/40P01, MariaDB 1213/1205) all end in a
// retried statement or a failed step, never in a second holder.
//
// Thread-safety: none; one owner calls it.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "leased_claim.h"
#include "sql_connection.h"
#include "sql_dialect.h"

namespace snowid::coord {

class SqlClient {
 public:
  // kInvalidArgument if an endpoint cannot be read. Each connection checks
  // `table` (snowid_node_claims if null), creating it if missing.
  static Result<std::unique_ptr<SqlClient>> connect(const SqlDialect& dialect,
                                                    const SqlStoreOptions& options,
                                                    const SqlTable* table = nullptr);

  // Runs `statement` (with the dialect's parts in braces filled in) with
  // `params`: on the endpoint that answered last, then on each other one
  // and once more, until one succeeds. The last error (kUnavailable) if none does.
  Result<sql::SqlRows> query(std::string_view statement,
                                 const std::vector<sql::SqlValue>& params);

  const SqlDialect& dialect() const { return *dialect_; }
  const StoreCounters& counters() const { return counters_; }

 private:
  SqlClient(const SqlDialect& dialect,
            std::vector<std::unique_ptr<sql::SqlConnection>> connections);

  const SqlDialect* dialect_;
  std::vector<std::unique_ptr<sql::SqlConnection>> connections_;
  std::size_t current_ = 0;
  StoreCounters counters_;
};

}  // namespace snowid::coord
