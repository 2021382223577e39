#include "cluster_commands.h"

#include <fmt/format.h>

#include <cstdio>

#include "exit_codes.h"
#include "snowid/decode.h"
#include "snowid/etcd_coordinator.h"
#include "snowid/time_text.h"

namespace snowid::cli {
namespace {

using std::chrono::milliseconds;

std::string age(milliseconds since, milliseconds now) {
  if (since.count() <= 0) return "-";
  return fmt::format("{:.1f}s", static_cast<double>((now - since).count()) / 1000.0);
}

}  // namespace

ClusterCommands::ClusterCommands(CLI::App& app) {
  cluster_ = app.add_subcommand("cluster", "Inspect and repair node-id claims in etcd");
  cluster_->require_subcommand(1);
  const auto add_common = [this](CLI::App* command) {
    command->add_option("--etcd", endpoints_, "etcd endpoints: HOST:PORT[,HOST:PORT...]")
        ->required();
    command->add_option("--cluster", cluster_name_, "snowid cluster name")->required();
    command->add_option("--user", user_, "etcd user (optional)");
    command->add_option("--password", password_, "etcd password");
    command->add_option("--timeout-ms", timeout_ms_, "Deadline of each etcd request")
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
}

std::optional<int> ClusterCommands::run() const {
  if (!cluster_->parsed()) return std::nullopt;
  return list_->parsed() ? list() : release();
}

namespace {

Result<EtcdOptions> etcd_options(const std::string& endpoints, const std::string& cluster,
                                 const std::string& user, const std::string& password,
                                 const std::string& timeout_ms) {
  auto parsed = parse_etcd_endpoints(endpoints);
  if (!parsed.ok()) return parsed.error();
  auto timeout = parse_unsigned(timeout_ms, 600'000, "--timeout-ms");
  if (!timeout.ok()) return timeout.error();
  if (*timeout == 0) return invalid_argument("--timeout-ms must be at least 1");
  EtcdOptions options;
  options.endpoints = std::move(*parsed);
  options.cluster = cluster;
  options.user = user;
  options.password = password;
  options.request_timeout = milliseconds{static_cast<long long>(*timeout)};
  return options;
}

}  // namespace

int ClusterCommands::list() const {
  auto options = etcd_options(endpoints_, cluster_name_, user_, password_, timeout_ms_);
  if (!options.ok()) return report_error(options.error());
  auto nodes = list_cluster(*options);
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
  auto options = etcd_options(endpoints_, cluster_name_, user_, password_, timeout_ms_);
  if (!options.ok()) return report_error(options.error());
  auto id = parse_unsigned(node_id_, (std::uint64_t{1} << 62), "node id");
  if (!id.ok()) return report_error(id.error());
  Status released = release_node_id(*options, *id, force_);
  if (!released.ok()) return report_error(released.error());
  std::printf("node id %llu has no claim now; its reservation stays\n",
              static_cast<unsigned long long>(*id));
  return 0;
}

}  // namespace snowid::cli
