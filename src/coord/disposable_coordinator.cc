// The disposable node-id policy (disposable_coordinator.h): one INSERT into
// WORKER_NODE per start, its ID the node id, and the row kept alive while the
// node runs.
//
// Invariant: a node id is used by the one start whose INSERT the database
// gave that ID, for as long as that start's row is there. AUTO_INCREMENT and
// identity columns never give an ID twice, short of the table going back (a
// restore from an older copy, a counter lowered): then a later start may get
// the ID of a node that still runs. So, as the leased stores do (THE
// TAKEOVER RULE, leased_claim.h), a node never trusts the table to be
// current:
//   - the running node heartbeats its row (MODIFIED = NOW(), matched on its
//     ID, HOST_NAME and PORT) every lease_ttl / 3 and checks its clock
//     against the database's each time; it issues only until lease_ttl -
//     safety margin after the last heartbeat it sent that matched, and stops
//     for good, saying why, once its row is gone or changed or its clock is
//     too far from the database's;
//   - a start begins above the database's clock (or its own, if later) at the
//     INSERT + lease_ttl + reserve_ahead: above anything a node whose row the
//     table lost can issue before it stops.
// An INSERT retried after a lost answer may leave a row no start uses; that
// wastes an id, never shares one.
#include "disposable_coordinator.h"

#include <fmt/format.h>
#include <unistd.h>

#include <atomic>
#include <charconv>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <random>
#include <thread>

#include "coordinator_options.h"
#include "leased_claim.h"
#include "node_id.h"
#include "sql_claim.h"
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
  // $1 ID, $2 host name, $3 port: one row if the start's row is still there.
  const char* heartbeat;
  const std::string& (*url)(const CoordinatorOptions&);
  Result<std::vector<std::string>> (*parse)(std::string_view);
};

const WorkerNodeStore kPostgres = {
    &coord::kPostgresDialect,
    {"worker_node", coord::kWorkerNodeSql},
    "INSERT INTO WORKER_NODE (HOST_NAME, PORT, TYPE, LAUNCH_DATE, MODIFIED, CREATED) "
    "VALUES ($1, $2, $3, CURRENT_DATE, NOW(), NOW()) RETURNING ID",
    "UPDATE WORKER_NODE SET MODIFIED = NOW() WHERE ID = $1 AND HOST_NAME = $2 AND PORT = $3 "
    "RETURNING 1",
    [](const CoordinatorOptions& o) -> const std::string& { return o.postgres.url; },
    parse_postgres_endpoints,
};

const WorkerNodeStore kMysql = {
    &coord::kMysqlDialect,
    {"WORKER_NODE", coord::kWorkerNodeMysqlSql},
    "INSERT INTO WORKER_NODE (HOST_NAME, PORT, TYPE, LAUNCH_DATE, MODIFIED, CREATED) "
    "VALUES ($1, $2, $3, CURRENT_DATE, NOW(), NOW()); SELECT LAST_INSERT_ID()",
    // ROW_COUNT() counts changed rows, and MODIFIED has whole seconds: the
    // row is looked up instead.
    "UPDATE WORKER_NODE SET MODIFIED = NOW() WHERE ID = $1 AND HOST_NAME = $2 AND PORT = $3; "
    "SELECT 1 FROM WORKER_NODE WHERE ID = $1 AND HOST_NAME = $2 AND PORT = $3",
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
  DisposableCoordinator(const WorkerNodeStore& store, Layout layout, LeaseOptions lease,
                        std::string endpoints, std::unique_ptr<coord::SqlClient> client)
      : store_(store),
        layout_(layout),
        lease_(std::move(lease)),
        endpoints_(std::move(endpoints)),
        client_(std::move(client)) {}

  ~DisposableCoordinator() override { stop_heartbeats(); }

  Result<Claim> claim() override {
    std::lock_guard lock(mutex_);
    if (claim_) return *claim_;
    // Checked before the INSERT, so that a node that must refuse wastes no id.
    auto before = database_time();
    if (!before.ok()) return before.error();
    if (Status agreed = clock_agrees(*before); !agreed.ok()) return agreed.error();
    const std::chrono::nanoseconds sent = coord::boot_time_now();
    auto id = insert_row();
    if (!id.ok()) return id.error();
    auto after = database_time();
    if (!after.ok()) return after.error();
    const NodeIdParts parts = split_node_id(layout_, *id);
    claim_ = Claim{};
    claim_->node_id = *id;
    claim_->datacenter_id = parts.datacenter_id;
    claim_->worker_id = parts.worker_id;
    claim_->generation = 1;
    claim_->floor = coord::takeover_floor(lease_, after->at + after->resolution,
                                          SystemClock::instance().now_fresh());
    claim_->floor_source = fmt::format(
        "the takeover floor ({}'s clock + lease_ttl + reserve_ahead: a WORKER_NODE restored from "
        "a backup may give this start the id of a node that still runs)",
        store_.dialect->title);
    deadline_ns_.store((sent + lease_.lease_ttl - lease_.safety_margin).count());
    heartbeats_ = std::thread([this] { keep_row_alive(); });
    return *claim_;
  }

  bool may_issue() const override {
    return !lost_.load(std::memory_order_acquire) &&
           coord::boot_time_now().count() < deadline_ns_.load(std::memory_order_acquire);
  }
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
    stop_heartbeats();
    std::lock_guard lock(mutex_);
    released_ = true;
    return {};
  }

  CoordinatorStats stats() const override;

 private:
  Result<std::uint64_t> insert_row() {
    host_ = host_name();
    port_ = port_text();
    auto rows = client_->query(store_.insert, {host_, port_, kActual});
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
    return id;
  }

  Result<coord::StoreTime> database_time() { return coord::read_database_clock(*client_); }

  Status clock_agrees(coord::StoreTime database) const {
    return coord::check_store_clock(lease_, store_.dialect->title, database,
                                    SystemClock::instance().now_fresh());
  }

  // The heartbeat thread: every lease_ttl / 3 until stopped or the row is lost.
  void keep_row_alive() {
    const auto every = std::chrono::duration_cast<std::chrono::milliseconds>(lease_.lease_ttl) / 3;
    while (!wait_for_stop(every)) {
      if (!heartbeat()) return;
    }
  }

  // One heartbeat: false once the node must stop for good (lost_ set).
  bool heartbeat() {
    std::uint64_t id = 0;
    {
      std::lock_guard lock(mutex_);
      id = claim_->node_id;
    }
    const std::chrono::nanoseconds sent = coord::boot_time_now();
    auto rows = client_->query(store_.heartbeat, {static_cast<std::int64_t>(id), host_, port_});
    if (!rows.ok()) {
      note_passed_deadline();
      return true;  // the deadline fences the node until the database answers
    }
    if (rows->empty()) {
      lose(fmt::format("the WORKER_NODE row of node id {} is gone or changed (the table restored "
                       "from an older copy, or rows deleted): another start may hold the id now; "
                       "restart this node to take a new one",
                       id));
      return false;
    }
    // Published before the clock read, which may wait on a database gone
    // silent since the heartbeat (as the leased coordinator does).
    deadline_ns_.store((sent + lease_.lease_ttl - lease_.safety_margin).count(),
                       std::memory_order_release);
    auto database = database_time();
    if (database.ok()) {
      if (Status agreed = clock_agrees(*database); !agreed.ok()) {
        lose(agreed.error().message + "; restart this node once its clock is fixed");
        return false;
      }
    }
    return true;
  }

  // Counts a deadline that passed (once per passing).
  void note_passed_deadline() {
    const bool passed = coord::boot_time_now().count() >= deadline_ns_.load();
    if (passed && !fenced_.exchange(true)) {
      fencing_events_.fetch_add(1);
      std::lock_guard lock(mutex_);
      last_loss_ = "no heartbeat reached the database before the deadline";
    } else if (!passed) {
      fenced_.store(false);
    }
  }

  void lose(std::string why) {
    lost_.store(true, std::memory_order_release);
    lost_claims_.fetch_add(1);
    std::lock_guard lock(mutex_);
    last_loss_ = std::move(why);
  }

  bool wait_for_stop(std::chrono::milliseconds period) {
    std::unique_lock lock(stop_mutex_);
    return stop_cv_.wait_for(lock, period, [this] { return stopping_; });
  }

  void stop_heartbeats() {
    {
      std::lock_guard lock(stop_mutex_);
      stopping_ = true;
    }
    stop_cv_.notify_all();
    if (heartbeats_.joinable()) heartbeats_.join();
  }

  const WorkerNodeStore& store_;
  const Layout layout_;
  const LeaseOptions lease_;
  const std::string endpoints_;
  mutable std::mutex mutex_;
  std::unique_ptr<coord::SqlClient> client_;  // claim(), then the heartbeat thread alone
  std::optional<Claim> claim_;
  std::string host_, port_;  // the row's HOST_NAME and PORT
  bool released_ = false;
  std::string last_loss_;  // under mutex_
  std::atomic<bool> lost_{false};
  std::atomic<bool> fenced_{false};
  std::atomic<std::int64_t> deadline_ns_{0};  // CLOCK_BOOTTIME
  std::atomic<std::uint64_t> lost_claims_{0}, fencing_events_{0};

  std::mutex stop_mutex_;
  std::condition_variable stop_cv_;
  bool stopping_ = false;
  std::thread heartbeats_;
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
  s.lost_claims = lost_claims_.load();
  s.fencing_events = fencing_events_.load();
  std::lock_guard lock(mutex_);
  s.last_loss = last_loss_;
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
  return std::unique_ptr<Coordinator>(new DisposableCoordinator(
      store, setup.layout, lease_options(setup), options->endpoints_text, std::move(*client)));
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
