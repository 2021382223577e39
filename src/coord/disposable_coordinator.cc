// The disposable node-id policy (disposable_coordinator.h): one INSERT into
// WORKER_NODE per start, its ID the node id.
//
// Invariant: a node id is used by the one start whose INSERT the database
// gave that ID. AUTO_INCREMENT and identity columns never give an ID twice
// (short of an operator lowering the counter), so two starts, however close,
// never share a node id, and a start may use its id for as long as it runs:
// may_issue() is always true. An INSERT retried after a lost answer may
// leave a row no start uses; that wastes an id, never shares one.
#include "disposable_coordinator.h"

#include <fmt/format.h>
#include <unistd.h>

#include <charconv>
#include <chrono>
#include <mutex>
#include <random>

#include "coordinator_options.h"
#include "node_id.h"
#include "sql_client.h"
#include "sql_dialect.h"
#include "worker_node_schema.h"

namespace snowid {
namespace {

using sql::SqlValue;

// uid-generator's WorkerNodeType: ACTUAL (a process on a host) is 2,
// CONTAINER is 1.
constexpr std::int64_t kActual = 2;

// What tells the two databases apart for WORKER_NODE.
struct WorkerNodeStore {
  const coord::SqlDialect* dialect;
  coord::SqlTable table;  // its name as the connection looks it up
  // $1 host name, $2 port, $3 type: one row with the new row's ID.
  const char* insert;
  const std::string& (*url)(const CoordinatorOptions&);
  Result<std::vector<std::string>> (*parse)(std::string_view);
};

const WorkerNodeStore kPostgres = {
    &coord::kPostgresDialect,
    {"worker_node", coord::kWorkerNodeSql},
    "INSERT INTO WORKER_NODE (HOST_NAME, PORT, TYPE, LAUNCH_DATE, MODIFIED, CREATED) "
    "VALUES ($1, $2, $3, CURRENT_DATE, NOW(), NOW()) RETURNING ID",
    [](const CoordinatorOptions& o) -> const std::string& { return o.postgres.url; },
    parse_postgres_endpoints,
};

const WorkerNodeStore kMysql = {
    &coord::kMysqlDialect,
    {"WORKER_NODE", coord::kWorkerNodeMysqlSql},
    "INSERT INTO WORKER_NODE (HOST_NAME, PORT, TYPE, LAUNCH_DATE, MODIFIED, CREATED) "
    "VALUES ($1, $2, $3, CURRENT_DATE, NOW(), NOW()); SELECT LAST_INSERT_ID()",
    [](const CoordinatorOptions& o) -> const std::string& { return o.mysql.url; },
    parse_mysql_endpoints,
};

// HOST_NAME as uid-generator's column holds it: at most 64 characters.
std::string host_name() {
  char host[256] = {};
  if (gethostname(host, sizeof host - 1) != 0) return "unknown";
  return std::string(host).substr(0, 64);
}

// PORT as uid-generator writes it for an ACTUAL node: "<Unix ms>-<random below 100000>".
std::string port_text() {
  const auto now = std::chrono::duration_cast<std::chrono::milliseconds>(
      std::chrono::system_clock::now().time_since_epoch());
  std::random_device random;
  return fmt::format("{}-{}", now.count(), std::uniform_int_distribution<int>(0, 99999)(random));
}

// The starts a layout allows: its node ids but 0, which no row gets.
std::uint64_t starts_in(const Layout& layout) { return node_id_count(layout) - 1; }

class DisposableCoordinator final : public Coordinator {
 public:
  DisposableCoordinator(const WorkerNodeStore& store, Layout layout, std::string endpoints,
                        std::unique_ptr<coord::SqlClient> client)
      : store_(store),
        layout_(layout),
        endpoints_(std::move(endpoints)),
        client_(std::move(client)) {}

  Result<Claim> claim() override {
    std::lock_guard lock(mutex_);
    if (claim_) return *claim_;
    auto rows = client_->query(store_.insert, {host_name(), port_text(), kActual});
    if (!rows.ok()) return rows.error();
    std::uint64_t id = 0;
    const std::string text = rows->empty() || rows->front().empty() ? "" : rows->front()[0];
    if (text.empty()) {
      return Error{ErrorCode::kUnavailable,
                   fmt::format("{}: WORKER_NODE gave no row ID", store_.dialect->title)};
    }
    // Not retried: a table that numbers its rows from 0 or below would waste
    // a row at every attempt, and node id 0 is no start's.
    if (std::from_chars(text.data(), text.data() + text.size(), id).ptr !=
            text.data() + text.size() ||
        id == 0) {
      return invalid_argument(fmt::format(
          "node_id_policy = \"disposable\": {} WORKER_NODE gave row ID '{}'; its IDs must start "
          "at 1, as uid-generator's AUTO_INCREMENT does",
          store_.dialect->title, text.substr(0, 24)));
    }
    if (id >= node_id_count(layout_)) {
      return invalid_argument(fmt::format(
          "node_id_policy = \"disposable\": {} WORKER_NODE gave this start row ID {}, beyond the "
          "layout's node ids (1..{}): its ids have run out; use a layout with more datacenter and "
          "worker bits",
          store_.dialect->title, id, starts_in(layout_)));
    }
    const NodeIdParts parts = split_node_id(layout_, id);
    claim_ = Claim{};
    claim_->node_id = id;
    claim_->datacenter_id = parts.datacenter_id;
    claim_->worker_id = parts.worker_id;
    claim_->generation = 1;
    return *claim_;
  }

  bool may_issue() const override { return true; }
  std::chrono::milliseconds reservation() const override { return std::chrono::milliseconds{0}; }

  std::uint64_t claim_generation() const override {
    std::lock_guard lock(mutex_);
    return claim_ ? claim_->generation : 0;
  }

  std::optional<Claim> current_claim() const override {
    std::lock_guard lock(mutex_);
    return claim_;
  }

  // The row stays: its ID is never given out again.
  Status release(std::optional<std::chrono::milliseconds>) override {
    std::lock_guard lock(mutex_);
    released_ = true;
    return {};
  }

  CoordinatorStats stats() const override;

 private:
  const WorkerNodeStore& store_;
  const Layout layout_;
  const std::string endpoints_;
  mutable std::mutex mutex_;
  std::unique_ptr<coord::SqlClient> client_;  // used by claim() only
  std::optional<Claim> claim_;
  bool released_ = false;
};

CoordinatorStats DisposableCoordinator::stats() const {
  CoordinatorStats s;
  s.store = store_.dialect->name;
  s.endpoints = endpoints_;
  const coord::StoreCounters& counters = client_->counters();
  s.store_requests = counters.requests.load();
  s.store_errors = counters.errors.load();
  s.store_latency_total = std::chrono::microseconds{counters.latency_total_us.load()};
  s.store_latency_max = std::chrono::microseconds{counters.latency_max_us.load()};
  std::lock_guard lock(mutex_);
  s.state = claim_ && !released_ ? ClaimState::kHeld : ClaimState::kUnclaimed;
  if (claim_) {
    s.claims = 1;
    s.node_id = claim_->node_id;
  }
  return s;
}

// The store's options for `setup`: its URL and the request deadline.
Result<SqlStoreOptions> options_of(const WorkerNodeStore& store, const CoordinatorSetup& setup) {
  const std::string& url = store.url(setup.options);
  auto endpoints = store.parse(url);
  if (!endpoints.ok()) return endpoints.error();
  SqlStoreOptions o;
  o.endpoints = std::move(*endpoints);
  o.endpoints_text = hide_sql_password(url);
  o.request_timeout = setup.options.store_request_timeout;
  return o;
}

Status check_disposable(const WorkerNodeStore& store, const CoordinatorSetup& setup) {
  auto options = options_of(store, setup);
  if (!options.ok()) return options.error();
  const std::uint64_t starts = starts_in(setup.layout);
  if (starts < kMinDisposableStarts) {
    return invalid_argument(fmt::format(
        "node_id_policy = \"disposable\" takes a new node id at every start, and this layout's "
        "{} datacenter and {} worker bits allow {} starts, fewer than {}; use more worker bits "
        "(the baidu preset's 22 allow 4194303)",
        setup.layout.datacenter_bits, setup.layout.worker_bits, starts, kMinDisposableStarts));
  }
  return {};
}

Result<std::unique_ptr<Coordinator>> make_disposable(const WorkerNodeStore& store,
                                                     const CoordinatorSetup& setup) {
  if (Status checked = check_disposable(store, setup); !checked.ok()) return checked.error();
  auto options = options_of(store, setup);
  auto client = coord::SqlClient::connect(*store.dialect, *options, &store.table);
  if (!client.ok()) return client.error();
  return std::unique_ptr<Coordinator>(
      new DisposableCoordinator(store, setup.layout, options->endpoints_text, std::move(*client)));
}

}  // namespace

Status check_postgres_disposable(const CoordinatorSetup& setup) {
  return check_disposable(kPostgres, setup);
}

Result<std::unique_ptr<Coordinator>> make_postgres_disposable(const CoordinatorSetup& setup) {
  return make_disposable(kPostgres, setup);
}

Status check_mysql_disposable(const CoordinatorSetup& setup) {
  return check_disposable(kMysql, setup);
}

Result<std::unique_ptr<Coordinator>> make_mysql_disposable(const CoordinatorSetup& setup) {
  return make_disposable(kMysql, setup);
}

}  // namespace snowid
