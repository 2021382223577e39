// One node's claim on a node id in a SQL database (a LeasedClaim): a row of
// snowid_node_claims whose holder is this claim's identity while its lease,
// by the database's clock, runs; every write under it is an UPDATE
// conditional on that identity. The invariant is in sql_claim.cc; the
// dialects differ only as sql_dialect.h says.
//
// Thread-safety: none; one owner calls it.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "leased_claim.h"
#include "sql_client.h"
#include "sql_coordinator.h"

namespace snowid::coord {

// The database's clock ({now}, Unix ms, 1 ms resolution), read now through
// `client`; kUnavailable naming the database if it gives no Unix-ms value.
// The takeover rule's reading for the SQL claims and disposable node ids.
Result<StoreTime> read_database_clock(SqlClient& client);

class SqlClaim final : public LeasedClaim {
 public:
  // Requires: options passed check_lease_options() (connect_checked does it).
  SqlClaim(std::unique_ptr<SqlClient> client, const SqlStoreOptions& options);

  Status release(std::optional<std::chrono::milliseconds> last_issued) override;
  void abandon() override;

  bool held() const override { return !holder_.empty(); }
  const StoreCounters& counters() const override { return client_->counters(); }

 private:
  // The live claims of the cluster, by the database's clock.
  Result<ClaimsSeen> read_claims(std::optional<std::uint64_t> preferred) override;
  // Writes the created marker if missing, adds the id's row if missing,
  // takes it if free, then reads its reservation and the marker together.
  Result<bool> try_claim(std::uint64_t node_id, std::string* holder) override;
  StepResult renew_lease() override;
  // SELECT of the database's clock ({now}).
  Result<StoreTime> read_store_time() override;
  std::string store_title() const override;
  // The record column of each cluster's created marker (row -1).
  Result<std::vector<ClusterIdSpace>> read_id_spaces() override;
  Status publish_id_space(const std::string& layout) override;
  // One UPDATE on our identity: raises H, republishes the record, renews.
  StepResult write_reservation(std::chrono::milliseconds target) override;
  // Sets created_now_ if this claim wrote the cluster's created marker.
  Status write_created_marker();
  // The floor of `node_id` just taken, from the row's H and the marker.
  Status set_floor(std::uint64_t node_id, const std::string& reservation,
                   const std::string& created);
  std::int64_t ttl_ms() const;

  std::unique_ptr<SqlClient> client_;
  SqlStoreOptions options_;
  std::uint64_t claims_made_ = 0;
  std::string holder_;  // this claim's identity in the row; "": not held
};

}  // namespace snowid::coord
