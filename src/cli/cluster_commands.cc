#include "cluster_commands.h"

#include <fmt/format.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "etcd_coordinator.h"
#include "exit_codes.h"
#include "redis_coordinator.h"
#include "snowid/decode.h"
#include "time_text.h"
#include "zookeeper_coordinator.h"

namespace snowid::cli {
namespace {

using std::chrono::milliseconds;

std::string age(milliseconds since, milliseconds now) {
  if (since.count() <= 0) return "-";
  return fmt::format("{:.1f}s", static_cast<double>((now - since).count()) / 1000.0);
}

}  // namespace

ClusterCommands::ClusterCommands(CLI::App& app) {
  cluster_ = app.add_subcommand("cluster",
                                "Inspect and repair node-id claims in etcd, Redis or ZooKeeper");
  cluster_->require_subcommand(1);
  const auto add_common = [this](CLI::App* command) {
    auto* etcd =
        command->add_option("--etcd", endpoints_, "etcd endpoints: HOST:PORT[,HOST:PORT...]");
    auto* redis =
        command->add_option("--redis", redis_endpoints_, "Redis servers: HOST:PORT[,HOST:PORT...]");
    auto* zookeeper = command->add_option("--zookeeper", zookeeper_endpoints_,
                                          "ZooKeeper servers: HOST:PORT[,HOST:PORT...]");
    etcd->excludes(redis, zookeeper);
    redis->excludes(zookeeper);
    command->add_option("--cluster", cluster_name_, "snowid cluster name")->required();
    command->add_option("--user", user_,
                        "etcd or Redis ACL user, or ZooKeeper digest user (optional)");
    command->add_option("--password", password_, "its password");
    command->add_option("--timeout-ms", timeout_ms_, "Deadline of each request to the store")
        ->default_str("2000");
  };
  list_ = cluster_->add_subcommand("list", "Show claimed and reserved node ids");
  add_common(list_);
  release_ = cluster_->add_subcommand(
      "release", "Delete a node id's claim (refused while its lease is alive)");
  release_->add_option("id", node_id_, "Node id (datacenter << worker_bits | worker)")
      ->required();
  release_->add_flag("--force", force_, "Release even though the holder's lease is alive");
  add_common(release_);
  confirm_loss_ = cluster_->add_subcommand(
      "confirm-loss", "Confirm a store loss a node reported: its /readyz turns ready again");
  confirm_loss_->add_option("--state-dir", state_dir_, "The node's state_dir")->required();
}

std::optional<int> ClusterCommands::run() const {
  if (!cluster_->parsed()) return std::nullopt;
  if (confirm_loss_->parsed()) return confirm_loss();
  return list_->parsed() ? list() : release();
}

namespace {

Result<milliseconds> request_timeout(const std::string& timeout_ms) {
  auto timeout = parse_unsigned(timeout_ms, 600'000, "--timeout-ms");
  if (!timeout.ok()) return timeout.error();
  if (*timeout == 0) return invalid_argument("--timeout-ms must be at least 1");
  return milliseconds{static_cast<long long>(*timeout)};
}

// The options of the store the flags name: (lease options, store's own).
template <typename Options>
Result<Options> store_options(Result<std::vector<std::string>> endpoints,
                              const std::string& cluster, const std::string& user,
                              const std::string& password, const std::string& timeout_ms) {
  if (!endpoints.ok()) return endpoints.error();
  auto timeout = request_timeout(timeout_ms);
  if (!timeout.ok()) return timeout.error();
  Options options;
  options.endpoints = std::move(*endpoints);
  options.cluster = cluster;
  options.user = user;
  options.password = password;
  options.request_timeout = *timeout;
  return options;
}

}  // namespace

template <typename Act>
auto ClusterCommands::with_store(Act act) const -> decltype(act(EtcdOptions{})) {
  const int stores =
      !endpoints_.empty() + !redis_endpoints_.empty() + !zookeeper_endpoints_.empty();
  if (stores != 1) {
    return invalid_argument(
        "name one store: --etcd HOST:PORT, --redis HOST:PORT or --zookeeper HOST:PORT");
  }
  if (!zookeeper_endpoints_.empty()) {
    auto options = store_options<ZooKeeperOptions>(parse_zookeeper_endpoints(zookeeper_endpoints_),
                                                   cluster_name_, user_, password_, timeout_ms_);
    if (!options.ok()) return options.error();
    return act(*options);
  }
  if (!redis_endpoints_.empty()) {
    auto options = store_options<RedisOptions>(parse_redis_endpoints(redis_endpoints_),
                                               cluster_name_, user_, password_, timeout_ms_);
    if (!options.ok()) return options.error();
    return act(*options);
  }
  auto options = store_options<EtcdOptions>(parse_etcd_endpoints(endpoints_), cluster_name_, user_,
                                            password_, timeout_ms_);
  if (!options.ok()) return options.error();
  return act(*options);
}

int ClusterCommands::list() const {
  auto nodes = with_store([](const auto& options) -> Result<std::vector<ClusterNode>> {
    return list_cluster(options);
  });
  if (!nodes.ok()) return report_error(nodes.error());
  const milliseconds now = SystemClock::instance().now_fresh();
  std::printf("%-6s %-8s %-10s %-11s %-24s %-40s %s\n", "NODE", "AGE", "LEASE_LEFT", "CLOCK_SKEW",
              "RESERVATION", "HOLDER", "ADDRESSES");
  for (const ClusterNode& node : *nodes) {
    const std::string lease =
        node.lease_time_left ? fmt::format("{}s", node.lease_time_left->count()) : "-";
    const std::string skew =
        node.claimed && node.published_wall_time.count() > 0
            ? fmt::format("{:+.1f}s",
                          static_cast<double>((node.published_wall_time - now).count()) / 1000.0)
            : "-";
    const std::string reservation =
        node.reservation.count() > 0 ? format_time(node.reservation) : "-";
    std::printf("%-6llu %-8s %-10s %-11s %-24s %-40s %s\n",
                static_cast<unsigned long long>(node.node_id),
                node.claimed ? age(node.started, now).c_str() : "-", lease.c_str(), skew.c_str(),
                reservation.c_str(), node.claimed ? node.holder.c_str() : "(not claimed)",
                node.addresses.empty() ? "-" : node.addresses.c_str());
  }
  return 0;
}

int ClusterCommands::release() const {
  auto id = parse_unsigned(node_id_, (std::uint64_t{1} << 62), "node id");
  if (!id.ok()) return report_error(id.error());
  Status released = with_store([this, node_id = *id](const auto& options) -> Status {
    return release_node_id(options, node_id, force_);
  });
  if (!released.ok()) return report_error(released.error());
  std::printf("node id %llu has no claim now; its reservation stays\n",
              static_cast<unsigned long long>(*id));
  return 0;
}

}  // namespace snowid::cli

namespace snowid::cli {

int ClusterCommands::confirm_loss() const {
  std::error_code ec;
  if (!std::filesystem::is_directory(state_dir_, ec)) {
    return report_error(invalid_argument(
        fmt::format("--state-dir {} is not a directory (the node's state_dir)", state_dir_)));
  }
  const auto path = std::filesystem::path(state_dir_) / kConfirmStoreLossFile;
  std::ofstream file(path);
  file << "confirmed at " << format_time(SystemClock::instance().now_fresh()) << "\n";
  file.close();
  if (!file) {
    return report_error(
        Error{ErrorCode::kUnavailable, fmt::format("cannot write {}", path.string())});
  }
  std::printf(
      "wrote %s: the node using %s accepts the store's new data within a second and reports ready "
      "again\n",
      path.c_str(), state_dir_.c_str());
  return 0;
}

}  // namespace snowid::cli
