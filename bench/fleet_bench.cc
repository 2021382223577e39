// What a fleet costs its store: N simulated snowid nodes claim node ids and
// renew their leases against a real store that this program starts on free
// loopback ports (tests/support) and stops when it ends:
//   etcd       3 members
//   redis      a primary and 2 replicas (the claim's WAIT rule waits for both)
//   zookeeper  a 3-server ensemble
//   postgres   one PostgreSQL server
//   mysql      one MariaDB server
// Each node is the coordinator snowidd builds (make_coordinator(), the
// factory's table): its own client, so its own connection or session, and
// its own background thread renewing every lease_ttl / 3 and raising the
// reservation, as a real node does. Nothing of the store traffic is
// simulated: the bench only counts.
//
// For each N of the ladder, in one cluster per N: the fleet claims with
// --claim-threads nodes starting at once (the claim time of the whole fleet
// and the p99 of one claim), settles until every node writes reservations
// (lease_ttl + 3.5 s after the last claim), then is measured
// over --periods renewal periods: renewals per second and their latency
// (CoordinatorStats::renewal_latency, timed around the coordinator's
// renewal; the percentile is the upper bound of its bucket, 19 % wide), the
// store's requests per second (renewals, clock reads, reservation writes),
// the CPU time (utime + stime, /proc/PID/stat) of every store process and
// its children (PostgreSQL's backends) and their proportional memory (Pss,
// /proc/PID/smaps_rollup) above what the store used before the fleet, and
// any claim lost or fenced. The fleet then releases its ids.
//
// Prints a table, one row per N, a "RESULT {json}" line per N, and the
// largest N whose p99 renewal stayed under a tenth of the lease. Exit status
// 1 if a node could not claim, lost its claim, or renewed nothing while
// measured; 2 on bad arguments or a store that did not start.
//
// Usage: snowid_fleet_bench --store etcd|redis|zookeeper|postgres|mysql
//          [--nodes 10,100,300,1000] [--lease-ttl-s 10] [--periods 3]
//          [--node-bits B] [--claim-threads 32] [--budget-s 240]
#include <fmt/format.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "coordinator_factory.h"
#include "coordinator_options.h"
#include "etcd_process.h"
#include "mariadb_process.h"
#include "postgres_process.h"
#include "redis_process.h"
#include "snowid/coordinator.h"
#include "zookeeper_process.h"

namespace snowid::bench {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::microseconds;
using std::chrono::milliseconds;
using std::chrono::seconds;

struct Arguments {
  std::string store;
  std::vector<int> nodes{10, 100, 300, 1000};
  seconds lease_ttl{10};
  int periods = 3;
  int node_bits = 0;  // 0: the least that holds the largest N, at least 10
  int claim_threads = 32;
  seconds budget{240};
};

std::optional<int> parse_int(std::string_view text) {
  int value = 0;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc{} || end != text.data() + text.size() || value <= 0) return std::nullopt;
  return value;
}

// Arguments, or nullopt after printing one line naming the bad option.
std::optional<Arguments> parse_arguments(int argc, char** argv) {
  Arguments a;
  for (int i = 1; i < argc; ++i) {
    const std::string_view flag = argv[i];
    if (i + 1 >= argc) {
      std::fprintf(stderr, "fleet_bench: %s needs a value\n", argv[i]);
      return std::nullopt;
    }
    const std::string_view value = argv[++i];
    std::optional<int> number = parse_int(value);
    if (flag == "--store") {
      a.store = value;
      continue;
    }
    if (flag == "--nodes") {
      a.nodes.clear();
      std::stringstream list{std::string(value)};
      bool all_numbers = true;
      for (std::string item; std::getline(list, item, ',');) {
        if (auto n = parse_int(item))
          a.nodes.push_back(*n);
        else
          all_numbers = false;
      }
      if (!a.nodes.empty() && all_numbers) continue;
    } else if (number.has_value()) {
      if (flag == "--lease-ttl-s" && *number >= 2)
        a.lease_ttl = seconds{*number};
      else if (flag == "--periods")
        a.periods = *number;
      else if (flag == "--node-bits" && *number <= 20)
        a.node_bits = *number;
      else if (flag == "--claim-threads")
        a.claim_threads = *number;
      else if (flag == "--budget-s")
        a.budget = seconds{*number};
      else
        number.reset();
      if (number.has_value()) continue;
    }
    std::fprintf(stderr, "fleet_bench: bad option %s %s\n", argv[i - 1], argv[i]);
    return std::nullopt;
  }
  const std::set<std::string> stores{"etcd", "redis", "zookeeper", "postgres", "mysql"};
  if (!stores.contains(a.store)) {
    std::fprintf(stderr,
                 "fleet_bench: --store must be etcd, redis, zookeeper, postgres or mysql\n");
    return std::nullopt;
  }
  return a;
}

// ---- The store's processes, as /proc shows them ----

struct ProcessUse {
  std::map<pid_t, double> cpu_seconds;  // utime + stime of each process
  double pss_mib = 0;                   // proportional set size, summed
};

// The CPU seconds the processes of both samples spent between them (a
// PostgreSQL backend that ended or began in between does not count, or its
// whole life would).
double cpu_between(const ProcessUse& start, const ProcessUse& end) {
  double spent = 0;
  for (const auto& [pid, spent_until_end] : end.cpu_seconds) {
    if (auto it = start.cpu_seconds.find(pid); it != start.cpu_seconds.end()) {
      spent += spent_until_end - it->second;
    }
  }
  return spent;
}

// Fields of /proc/PID/stat after the command's closing parenthesis: [0] is
// the state (field 3), so field k is [k - 3].
std::vector<std::string> stat_fields(pid_t pid) {
  std::ifstream file(fmt::format("/proc/{}/stat", pid));
  std::string text((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  std::vector<std::string> fields;
  const std::size_t close = text.rfind(')');
  if (close == std::string::npos) return fields;
  std::stringstream rest(text.substr(close + 1));
  for (std::string field; rest >> field;) fields.push_back(field);
  return fields;
}

// `roots` and all their descendants.
std::vector<pid_t> process_tree(const std::vector<pid_t>& roots) {
  std::multimap<pid_t, pid_t> children;
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    const std::string name = entry.path().filename();
    auto pid = parse_int(name);
    if (!pid) continue;
    const std::vector<std::string> fields = stat_fields(*pid);
    if (fields.size() > 1) children.emplace(std::stoi(fields[1]), *pid);
  }
  std::vector<pid_t> tree(roots.begin(), roots.end());
  for (std::size_t i = 0; i < tree.size(); ++i) {
    auto [begin, end] = children.equal_range(tree[i]);
    for (auto it = begin; it != end; ++it) tree.push_back(it->second);
  }
  return tree;
}

double pss_mib(pid_t pid) {
  std::ifstream file(fmt::format("/proc/{}/smaps_rollup", pid));
  for (std::string line; std::getline(file, line);) {
    if (line.starts_with("Pss:")) return std::stod(line.substr(4)) / 1024.0;
  }
  return 0;
}

ProcessUse process_use(const std::vector<pid_t>& roots) {
  static const double ticks = static_cast<double>(sysconf(_SC_CLK_TCK));
  ProcessUse use;
  for (pid_t pid : process_tree(roots)) {
    const std::vector<std::string> fields = stat_fields(pid);
    if (fields.size() < 13) continue;
    use.cpu_seconds[pid] = (std::stod(fields[11]) + std::stod(fields[12])) / ticks;
    use.pss_mib += pss_mib(pid);
  }
  return use;
}

double own_cpu_seconds() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  auto s = [](const timeval& t) {
    return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) / 1e6;
  };
  return s(usage.ru_utime) + s(usage.ru_stime);
}

// ---- The stores ----

// A store started for the bench: how coordinators reach it, and its processes.
struct Store {
  std::string description;
  std::function<void(CoordinatorOptions&)> configure;
  std::vector<pid_t> pids;
  std::vector<std::shared_ptr<void>> keep;  // the processes, stopped at destruction
};

Error unavailable(std::string why) { return Error{ErrorCode::kUnavailable, std::move(why)}; }

std::string join(const std::vector<std::string>& parts) {
  std::string joined;
  for (const auto& part : parts) joined += (joined.empty() ? "" : ",") + part;
  return joined;
}

// The store started, or an error saying why not.
Result<Store> start_etcd() {
  auto etcd = std::make_shared<test::EtcdCluster>(3);
  if (!etcd->started()) return unavailable("etcd: " + etcd->why());
  Store store{"etcd, 3 members", nullptr, {etcd->pid(0), etcd->pid(1), etcd->pid(2)}, {etcd}};
  const std::string endpoints = join(etcd->endpoints());
  store.configure = [endpoints](CoordinatorOptions& o) { o.etcd.endpoints = endpoints; };
  return store;
}

Result<Store> start_redis() {
  auto primary = std::make_shared<test::RedisServer>();
  if (!primary->started()) return unavailable("redis: " + primary->why());
  Store store{"Redis, a primary and 2 replicas", nullptr, {primary->pid()}, {primary}};
  for (int i = 0; i < 2; ++i) {
    auto replica = std::make_shared<test::RedisServer>(
        std::vector<std::string>{"--replicaof", "127.0.0.1", std::to_string(primary->port())});
    if (!replica->started()) return unavailable("redis replica: " + replica->why());
    store.pids.push_back(replica->pid());
    store.keep.push_back(replica);
  }
  const auto deadline = Clock::now() + seconds{20};
  while (primary->cli({"INFO", "replication"}).find("connected_slaves:2") == std::string::npos) {
    if (Clock::now() > deadline) return unavailable("redis: the replicas did not connect");
    std::this_thread::sleep_for(milliseconds{100});
  }
  const std::string endpoint = primary->endpoint();
  store.configure = [endpoint](CoordinatorOptions& o) { o.redis.endpoints = endpoint; };
  return store;
}

Result<Store> start_zookeeper() {
  auto ensemble = std::make_shared<test::ZooKeeperEnsemble>(3);
  if (!ensemble->started()) return unavailable("zookeeper: " + ensemble->why());
  Store store{"ZooKeeper, 3 servers",
              nullptr,
              {ensemble->pid(0), ensemble->pid(1), ensemble->pid(2)},
              {ensemble}};
  const std::string endpoints = ensemble->endpoints_text();
  store.configure = [endpoints](CoordinatorOptions& o) {
    o.zookeeper.endpoints = endpoints;
    o.zookeeper.tick_time = test::ZooKeeperEnsemble::kTickTime;
  };
  return store;
}

Result<Store> start_postgres(int connections) {
  auto server = std::make_shared<test::PostgresProcess>();
  if (!server->started() || !server->allow_connections(connections)) {
    return unavailable("postgres: " + server->error());
  }
  Store store{"PostgreSQL, one server", nullptr, {server->postmaster_pid()}, {server}};
  const std::string url = server->url();
  store.configure = [url](CoordinatorOptions& o) { o.postgres.url = url; };
  return store;
}

Result<Store> start_mysql(int connections) {
  auto server = std::make_shared<test::MariadbProcess>();
  if (!server->started() ||
      !server->sql(fmt::format("SET GLOBAL max_connections = {}", connections))) {
    return unavailable("mysql: " + server->error());
  }
  Store store{"MariaDB, one server", nullptr, {server->pid()}, {server}};
  const std::string url = server->url();
  store.configure = [url](CoordinatorOptions& o) { o.mysql.url = url; };
  return store;
}

Result<Store> start_store(const Arguments& a) {
  const int connections = *std::max_element(a.nodes.begin(), a.nodes.end()) + 100;
  if (a.store == "etcd") return start_etcd();
  if (a.store == "redis") return start_redis();
  if (a.store == "zookeeper") return start_zookeeper();
  if (a.store == "postgres") return start_postgres(connections);
  return start_mysql(connections);
}

// ---- The fleet ----

// The default layout's 41 timestamp bits, with `node_bits` of node id
// (5 of them datacenter bits) taken from the sequence.
Layout layout_with(int node_bits) {
  Layout layout;
  layout.datacenter_bits = 5;
  layout.worker_bits = node_bits - 5;
  layout.sequence_bits = 22 - node_bits;
  return layout;
}

CoordinatorSetup setup_for(const Arguments& a, const Store& store, const std::string& cluster,
                           int node_bits) {
  CoordinatorSetup setup;
  setup.options.kind = a.store;
  setup.options.cluster = cluster;
  setup.options.lease_ttl = a.lease_ttl;
  // Each N has its own cluster under the same layout in the same store.
  setup.options.share_id_space = true;
  store.configure(setup.options);
  setup.layout = layout_with(node_bits);
  return setup;
}

struct Fleet {
  std::vector<std::unique_ptr<Coordinator>> nodes;
  std::vector<milliseconds> claim_times;  // of the nodes that claimed
  std::vector<std::string> failures;
  double seconds_to_claim = 0;
};

// Runs `work(i)` for i in [0, count) on `threads` threads.
void parallel(int count, int threads, const std::function<void(int)>& work) {
  std::atomic<int> next{0};
  std::vector<std::thread> pool;
  for (int t = 0; t < std::min(count, threads); ++t) {
    pool.emplace_back([&] {
      for (int i = next++; i < count; i = next++) work(i);
    });
  }
  for (auto& thread : pool) thread.join();
}

// Node i prefers node id i and retries for up to 30 s, as snowidd's
// claim_timeout does. A node that would start claiming more than 90 s
// after the first does not (an overloaded store would keep the bench for
// count / threads * 30 s): it counts as not claimed.
Fleet claim_fleet(const CoordinatorSetup& base, int count, int threads) {
  Fleet fleet;
  fleet.nodes.resize(static_cast<std::size_t>(count));
  std::mutex mutex;
  const auto began = Clock::now();
  parallel(count, threads, [&](int i) {
    if (Clock::now() - began > seconds{90}) {
      std::lock_guard lock(mutex);
      fleet.failures.push_back(fmt::format("node {}: not tried, 90 s after the first", i));
      return;
    }
    CoordinatorSetup setup = base;
    setup.node_id = static_cast<std::uint64_t>(i);
    setup.advertised_addresses = {fmt::format("127.0.0.{}:8080", 1 + i % 250)};
    const auto started = Clock::now();
    auto made = make_coordinator(setup);
    if (!made.ok()) {
      std::lock_guard lock(mutex);
      fleet.failures.push_back(fmt::format("node {}: {}", i, made.error().message));
      return;
    }
    // One coordinator, claim() retried on it with snowidd's backoff
    // (src/server/service/node.cc): the same connection or session.
    std::string why;
    for (milliseconds backoff{200}; Clock::now() - started < seconds{30};
         backoff = std::min(backoff * 2, milliseconds{2000})) {
      auto claimed = (*made)->claim();
      if (claimed.ok()) {
        std::lock_guard lock(mutex);
        fleet.nodes[static_cast<std::size_t>(i)] = std::move(*made);
        fleet.claim_times.push_back(
            std::chrono::duration_cast<milliseconds>(Clock::now() - started));
        return;
      }
      why = claimed.error().message;
      if (claimed.error().code == ErrorCode::kInvalidArgument) break;
      std::this_thread::sleep_for(backoff);
    }
    std::lock_guard lock(mutex);
    fleet.failures.push_back(fmt::format("node {}: {}", i, why));
  });
  fleet.seconds_to_claim = std::chrono::duration<double>(Clock::now() - began).count();
  return fleet;
}

// What the fleet's coordinators counted, summed.
struct FleetCounts {
  std::uint64_t renewals = 0;
  std::array<std::uint64_t, kRenewalLatencyBuckets> latency{};
  std::uint64_t store_requests = 0;
  std::uint64_t store_errors = 0;
  std::uint64_t losses = 0;  // lost claims and fencing events
  int held = 0;
  ProcessUse store;
  double bench_cpu_seconds = 0;
  Clock::time_point at;
};

FleetCounts tally(const Fleet& fleet, const Store& store) {
  FleetCounts c;
  for (const auto& node : fleet.nodes) {
    if (!node) continue;
    const CoordinatorStats s = node->stats();
    c.renewals += s.renewals;
    for (std::size_t i = 0; i < kRenewalLatencyBuckets; ++i) c.latency[i] += s.renewal_latency[i];
    c.store_requests += s.store_requests;
    c.store_errors += s.store_errors;
    c.losses += s.lost_claims + s.fencing_events;
    if (s.state == ClaimState::kHeld) ++c.held;
  }
  c.store = process_use(store.pids);
  c.bench_cpu_seconds = own_cpu_seconds();
  c.at = Clock::now();
  return c;
}

// The upper bound of the bucket holding the q-quantile of `buckets`
// (microseconds::max() if it is the last one).
microseconds quantile(const std::array<std::uint64_t, kRenewalLatencyBuckets>& buckets, double q) {
  std::uint64_t total = 0;
  for (auto n : buckets) total += n;
  const auto rank = static_cast<std::uint64_t>(std::ceil(q * static_cast<double>(total)));
  std::uint64_t seen = 0;
  for (std::size_t i = 0; i < kRenewalLatencyBuckets; ++i) {
    seen += buckets[i];
    if (seen >= std::max<std::uint64_t>(rank, 1)) return renewal_latency_bound(i);
  }
  return microseconds::max();
}

std::string in_ms(microseconds t) {
  return t == microseconds::max() ? "inf"
                                  : fmt::format("{:.2f}", static_cast<double>(t.count()) / 1000.0);
}

// One rung of the ladder, measured.
struct Rung {
  int nodes = 0;
  int claimed = 0;
  double seconds_to_claim = 0;
  milliseconds claim_p99{0};
  double renewals_per_second = 0;
  double requests_per_second = 0;
  microseconds renewal_p50{0}, renewal_p99{0};
  double store_cpu_cores = 0;       // CPU seconds per second
  double store_idle_cpu_cores = 0;  // the same before the fleet claimed
  double store_pss_mib = 0;
  double pss_kib_per_node = 0;
  double bench_cpu_cores = 0;
  std::uint64_t losses = 0;
  std::uint64_t store_errors = 0;
  std::uint64_t renewals = 0;
  bool failed = false;
};

// The store's CPU (CPU seconds per second) over `span` with no fleet.
double idle_cpu_cores(const Store& store, milliseconds span) {
  const ProcessUse start = process_use(store.pids);
  const auto began = Clock::now();
  std::this_thread::sleep_for(span);
  const ProcessUse end = process_use(store.pids);
  return cpu_between(start, end) / std::chrono::duration<double>(Clock::now() - began).count();
}

Rung measure(const Arguments& a, const Store& store, int n, int node_bits) {
  const double idle = idle_cpu_cores(store, milliseconds{3000});
  const ProcessUse before = process_use(store.pids);
  const CoordinatorSetup setup =
      setup_for(a, store, fmt::format("fleet-{}-{}", n, ::getpid()), node_bits);
  Fleet fleet = claim_fleet(setup, n, a.claim_threads);
  Rung r;
  r.nodes = n;
  r.claimed = static_cast<int>(fleet.claim_times.size());
  r.seconds_to_claim = fleet.seconds_to_claim;
  std::sort(fleet.claim_times.begin(), fleet.claim_times.end());
  if (!fleet.claim_times.empty()) {
    r.claim_p99 = fleet.claim_times[(fleet.claim_times.size() * 99) / 100];
  }
  for (std::size_t i = 0; i < std::min<std::size_t>(3, fleet.failures.size()); ++i) {
    std::fprintf(stderr, "  claim failed: %s\n", fleet.failures[i].c_str());
  }
  // Steady state: a claim's first reservation lies lease_ttl + reserve_ahead
  // (3 s) above its clock, so the node writes none until then; measured
  // from there on, every node renews and raises its reservation as it will
  // for as long as it runs.
  const auto period = std::chrono::duration_cast<milliseconds>(a.lease_ttl) / 3;
  std::this_thread::sleep_for(a.lease_ttl + milliseconds{3500});
  const FleetCounts start = tally(fleet, store);
  std::this_thread::sleep_for(period * a.periods);
  const FleetCounts end = tally(fleet, store);
  const double window = std::chrono::duration<double>(end.at - start.at).count();
  std::array<std::uint64_t, kRenewalLatencyBuckets> latency{};
  for (std::size_t i = 0; i < kRenewalLatencyBuckets; ++i) {
    latency[i] = end.latency[i] - start.latency[i];
  }
  r.renewals = end.renewals - start.renewals;
  r.renewals_per_second = static_cast<double>(r.renewals) / window;
  r.requests_per_second = static_cast<double>(end.store_requests - start.store_requests) / window;
  r.renewal_p50 = quantile(latency, 0.50);
  r.renewal_p99 = quantile(latency, 0.99);
  r.store_cpu_cores = cpu_between(start.store, end.store) / window;
  r.store_idle_cpu_cores = idle;
  r.bench_cpu_cores = (end.bench_cpu_seconds - start.bench_cpu_seconds) / window;
  r.store_pss_mib = end.store.pss_mib;
  r.pss_kib_per_node = (end.store.pss_mib - before.pss_mib) * 1024.0 / std::max(1, r.claimed);
  r.losses = end.losses;
  r.store_errors = end.store_errors - start.store_errors;
  r.failed = r.claimed < n || r.losses > 0 || r.renewals == 0 || end.held < r.claimed;
  // Every node gives its id back at once, as a fleet stopped together does.
  parallel(static_cast<int>(fleet.nodes.size()), a.claim_threads * 4, [&](int i) {
    if (auto& node = fleet.nodes[static_cast<std::size_t>(i)]) {
      (void)node->release(std::nullopt);
      node.reset();
    }
  });
  return r;
}

// The store's CPU above its idle use, per node: microseconds per second.
double cpu_us_per_node(const Rung& r) {
  return (r.store_cpu_cores - r.store_idle_cpu_cores) * 1e6 / std::max(1, r.claimed);
}

void print_row(const Rung& r) {
  std::printf(
      "%6d %7d %7.1f %7lld %8.1f %8.1f %7s %7s %6.1f %6.1f %8.0f %8.0f %7.1f %5llu %6llu%s\n",
      r.nodes, r.claimed, r.seconds_to_claim, static_cast<long long>(r.claim_p99.count()),
      r.renewals_per_second, r.requests_per_second, in_ms(r.renewal_p50).c_str(),
      in_ms(r.renewal_p99).c_str(), r.store_idle_cpu_cores * 100, r.store_cpu_cores * 100,
      cpu_us_per_node(r), r.pss_kib_per_node, r.bench_cpu_cores * 100,
      static_cast<unsigned long long>(r.losses), static_cast<unsigned long long>(r.store_errors),
      r.failed ? "  FAILED" : "");
  std::fflush(stdout);
}

void print_json(const Arguments& a, const Rung& r, int node_bits) {
  std::printf(
      "RESULT {\"store\":\"%s\",\"nodes\":%d,\"claimed\":%d,\"node_bits\":%d,"
      "\"lease_ttl_s\":%lld,\"fleet_claim_s\":%.2f,\"claim_p99_ms\":%lld,"
      "\"renewals_per_s\":%.1f,\"store_requests_per_s\":%.1f,\"renewal_p50_ms\":\"%s\","
      "\"renewal_p99_ms\":\"%s\",\"store_idle_cpu_pct\":%.1f,\"store_cpu_pct\":%.1f,"
      "\"store_cpu_us_per_node_s\":%.1f,\"store_pss_mib\":%.0f,\"store_pss_kib_per_node\":%.0f,"
      "\"bench_cpu_pct\":%.1f,\"losses\":%llu,\"store_errors\":%llu,\"renewals\":%llu,"
      "\"failed\":%s}\n",
      a.store.c_str(), r.nodes, r.claimed, node_bits, static_cast<long long>(a.lease_ttl.count()),
      r.seconds_to_claim, static_cast<long long>(r.claim_p99.count()), r.renewals_per_second,
      r.requests_per_second, in_ms(r.renewal_p50).c_str(), in_ms(r.renewal_p99).c_str(),
      r.store_idle_cpu_cores * 100, r.store_cpu_cores * 100, cpu_us_per_node(r), r.store_pss_mib,
      r.pss_kib_per_node, r.bench_cpu_cores * 100, static_cast<unsigned long long>(r.losses),
      static_cast<unsigned long long>(r.store_errors), static_cast<unsigned long long>(r.renewals),
      r.failed ? "true" : "false");
  std::fflush(stdout);
}

int run(const Arguments& a) {
  const int largest = *std::max_element(a.nodes.begin(), a.nodes.end());
  int node_bits = a.node_bits;
  if (node_bits == 0) {
    node_bits = std::max(10, static_cast<int>(std::ceil(std::log2(largest))));
  }
  if (node_bits < 6 || largest > (1 << node_bits)) {
    std::fprintf(stderr, "fleet_bench: --node-bits %d cannot hold %d nodes\n", node_bits, largest);
    return 2;
  }
  auto store = start_store(a);
  if (!store.ok()) {
    std::fprintf(stderr, "fleet_bench: %s\n", store.error().message.c_str());
    return 2;
  }
  const auto tenth = std::chrono::duration_cast<microseconds>(a.lease_ttl) / 10;
  std::printf("== %s; lease %llds, renewal every %.2f s, %d periods measured, %d node-id bits\n",
              store->description.c_str(), static_cast<long long>(a.lease_ttl.count()),
              static_cast<double>(a.lease_ttl.count()) / 3, a.periods, node_bits);
  // cpu%: the store's processes, idle and with the fleet (100 = one core);
  // us/n/s: CPU above idle per node, microseconds per second.
  std::printf("%6s %7s %7s %7s %8s %8s %7s %7s %6s %6s %8s %8s %7s %5s %6s\n", "nodes", "claimed",
              "claim_s", "c_p99ms", "renew/s", "req/s", "p50_ms", "p99_ms", "idle%", "cpu%",
              "us/n/s", "KiB/node", "bench%", "lost", "errors");
  const auto began = Clock::now();
  int safe = 0;
  bool failed = false;
  for (int n : a.nodes) {
    if (Clock::now() - began > a.budget) {
      std::printf("(budget of %llds spent: N >= %d not run)\n",
                  static_cast<long long>(a.budget.count()), n);
      break;
    }
    const Rung rung = measure(a, *store, n, node_bits);
    print_row(rung);
    print_json(a, rung, node_bits);
    failed = failed || rung.failed;
    if (!rung.failed && rung.renewal_p99 < tenth) safe = std::max(safe, n);
    if (rung.claimed < n) break;  // a larger fleet would not claim either
  }
  std::printf("largest N with p99 renewal under a tenth of the lease (%s ms): %d\n",
              in_ms(tenth).c_str(), safe);
  return failed ? 1 : 0;
}

}  // namespace
}  // namespace snowid::bench

int main(int argc, char** argv) {
  auto arguments = snowid::bench::parse_arguments(argc, argv);
  if (!arguments) return 2;
  return snowid::bench::run(*arguments);
}
