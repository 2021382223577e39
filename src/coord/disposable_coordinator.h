// node_id_policy = "disposable": Baidu uid-generator's way of giving out node
// ids, as an option of the SQL stores (coordinator = "postgres" or "mysql").
//
// Every start inserts one row into uid-generator's WORKER_NODE table
// (sql/worker_node.sql, sql/worker_node.mysql.sql: its columns and types) and
// the database assigns the row's ID (AUTO_INCREMENT, or an identity column);
// that ID is this start's node id. The database never hands an ID out twice,
// so no two starts share a node id: there is no lease, no reservation and
// no fence, and a node never loses its id while it runs. The row written is
// a valid uid-generator row (HOST_NAME the host's name, PORT
// "<Unix ms>-<random below 100000>", TYPE 2, ACTUAL), so snowid and
// uid-generator can share one table.
//
// The price is that ids run out: a layout must leave room for
// kMinDisposableStarts starts at least (checked with the configuration), and
// a start whose ID does not fit the layout's node-id bits refuses to run.
//
// stats() names the store and its endpoints, not leased, with the node id:
// the server shows the starts the layout still allows after it
// (node_id_starts_left in /v1/info).
//
// Thread-safety: the coordinator's methods may be called from any thread.
#pragma once

#include <cstdint>
#include <memory>

#include "snowid/coordinator.h"
#include "snowid/error.h"

namespace snowid {

struct CoordinatorSetup;

// The value of node_id_policy that picks these coordinators.
inline constexpr const char* kDisposablePolicy = "disposable";

// A layout whose node ids (ids start at 1) allow fewer starts than this is
// refused: its ids would run out within that many restarts.
inline constexpr std::uint64_t kMinDisposableStarts = 1000;

// validate()'s checks (the URL, and room in the layout) and the coordinators
// the factory's table of disposable stores makes.
Status check_postgres_disposable(const CoordinatorSetup& setup);
Result<std::unique_ptr<Coordinator>> make_postgres_disposable(const CoordinatorSetup& setup);
Status check_mysql_disposable(const CoordinatorSetup& setup);
Result<std::unique_ptr<Coordinator>> make_mysql_disposable(const CoordinatorSetup& setup);

}  // namespace snowid
