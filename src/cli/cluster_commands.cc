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

namespace snowid::cli {
namespace {

using std::chrono::milliseconds;

std::string age(milliseconds since, milliseconds now) {
  if (since.count() <= 0) return "-";
  return fmt::format("{:.1f}s", static_cast<double>((now - since).count()) / 1000.0);
}

// "a", "a or b", "a, b or c" of `part`(store) for each store.
template <typename Part>
std::string one_of(const std::vector<LeasingStore>& stores, Part part) {
  std::string out;
  for (std::size_t i = 0; i < stores.size(); ++i) {
    if (i > 0) out += i + 1 == stores.size() ? " or " : ", ";
    out += part(stores[i]);
  }
  return out;
}

}  // namespace

ClusterCommands::ClusterCommands(CLI::App& app) {
  cluster_ = app.add_subcommand(
      "cluster", "Inspect and repair node-id claims in " +
                     one_of(stores_, [](const LeasingStore& s) { return s.tool.title; }));
  cluster_->require_subcommand(1);
  const auto add_common = [this](CLI::App* command) {
    std::vector<CLI::Option*> flags;
    for (std::size_t i = 0; i < stores_.size(); ++i) {
      flags.push_back(command->add_option("--" + stores_[i].name, endpoints_[i],
                                          stores_[i].tool.endpoints_help));
      for (std::size_t j = 0; j < i; ++j) flags[j]->excludes(flags[i]);
    }
    command->add_option("--cluster", cluster_name_, "snowid cluster name")->required();
    const std::string users =
        one_of(stores_, [](const LeasingStore& s) { return s.tool.user_help; });
    command->add_option("--user", user_, users + " (optional)");
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

bool ClusterCommands::parsed() const { return cluster_->parsed(); }

int ClusterCommands::run() const {
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

}  // namespace

Result<std::pair<const LeasingStore*, coord::StoreAccess>> ClusterCommands::chosen_store() const {
  std::size_t chosen = 0;
  int named = 0;
  for (std::size_t i = 0; i < stores_.size(); ++i) {
    if (endpoints_[i].empty()) continue;
    ++named;
    chosen = i;
  }
  if (named != 1) {
    return invalid_argument("name one store: " + one_of(stores_, [](const LeasingStore& s) {
                              return "--" + s.name + " HOST:PORT";
                            }));
  }
  auto timeout = request_timeout(timeout_ms_);
  if (!timeout.ok()) return timeout.error();
  coord::StoreAccess access;
  access.endpoints = endpoints_[chosen];
  access.cluster = cluster_name_;
  access.user = user_;
  access.password = password_;
  access.request_timeout = *timeout;
  return std::pair{&stores_[chosen], std::move(access)};
}

int ClusterCommands::list() const {
  auto store = chosen_store();
  if (!store.ok()) return report_error(store.error());
  auto nodes = store->first->tool.list(store->second);
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
  auto store = chosen_store();
  if (!store.ok()) return report_error(store.error());
  Status released = store->first->tool.release(store->second, *id, force_);
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
