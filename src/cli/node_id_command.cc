#include "node_id_command.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cstdio>
#include <nlohmann/json.hpp>

#include "exit_codes.h"
#include "snowid/decode.h"

namespace snowid::cli {

NodeIdCommand::NodeIdCommand(CLI::App& app, LayoutArgs& layout_args) : layout_args_(layout_args) {
  node_id_ = app.add_subcommand("node-id", "Show node ids that other ID libraries derive here");
  node_id_->require_subcommand(1);
  mac_pid_ = node_id_->add_subcommand(
      "mac-pid", "The datacenter and worker ids MyBatis-Plus and Hutool derive from MAC and pid");
  mac_pid_->add_option("--pid", pid_, "The process (default: this one)");
  mac_pid_->add_option("--interface", interface_,
                       "Take this interface's MAC (default: the one holding the hostname's "
                       "address, as MyBatis-Plus does)");
  mac_pid_->add_option("--processes", processes_, "Collision odds for this many processes")
      ->default_str("10");
  mac_pid_->add_flag("--json", json_, "One JSON object");
  layout_args.add_to(*mac_pid_);
}

bool NodeIdCommand::parsed() const { return node_id_->parsed(); }

int NodeIdCommand::run() const {
  auto layout = layout_args_.resolve_layout();
  if (!layout.ok()) return report_error(layout.error());
  std::int64_t pid = ::getpid();
  if (!pid_.empty()) {
    auto parsed = parse_unsigned(pid_, 4'194'304, "--pid");
    if (!parsed.ok()) return report_error(parsed.error());
    pid = static_cast<std::int64_t>(*parsed);
  }
  auto processes = parse_unsigned(processes_, 1'000'000, "--processes");
  if (!processes.ok()) return report_error(processes.error());
  std::optional<std::string> interface;
  if (!interface_.empty()) interface = interface_;
  auto id = mac_pid_node_id(*layout, pid, interface);
  if (!id.ok()) return report_error(id.error());
  const std::uint64_t node_id = id->datacenter_id << layout->worker_bits | id->worker_id;
  const double apart = mac_pid_collision_odds(*layout, *processes, false);
  const double together = mac_pid_collision_odds(*layout, *processes, true);
  if (json_) {
    nlohmann::json out = {{"pid", id->pid},
                          {"interface", id->interface},
                          {"mac", id->mac},
                          {"how", id->how},
                          {"datacenter_id", id->datacenter_id},
                          {"worker_id", id->worker_id},
                          {"node_id", node_id},
                          {"processes", *processes},
                          {"collision_odds_on_separate_machines", apart},
                          {"collision_odds_on_one_machine", together}};
    std::printf("%s\n", out.dump().c_str());
    return 0;
  }
  std::printf("datacenter %llu, worker %llu (node id %llu) for pid %lld\n",
              static_cast<unsigned long long>(id->datacenter_id),
              static_cast<unsigned long long>(id->worker_id),
              static_cast<unsigned long long>(node_id), static_cast<long long>(id->pid));
  std::printf("MAC %s of %s: %s\n", id->mac.empty() ? "-" : id->mac.c_str(),
              id->interface.empty() ? "-" : id->interface.c_str(), id->how.c_str());
  std::printf(
      "%llu processes get two equal ids with odds %.1f%% on separate machines, %.1f%% on one "
      "machine; use a coordinator (etcd, Redis, ZooKeeper) for a fleet\n",
      static_cast<unsigned long long>(*processes), 100 * apart, 100 * together);
  return 0;
}

Result<MacPidNodeId> mac_pid_node_id_for_gen(const Layout& layout) {
  auto id = mac_pid_node_id(layout, ::getpid(), std::nullopt);
  if (!id.ok()) return id;
  std::fprintf(stderr,
               "snowid: warning: datacenter %llu, worker %llu from the MAC of %s and pid %lld "
               "(--node-id-from mac-pid): another process or machine can derive the same pair "
               "and repeat these IDs; see `snowid node-id mac-pid`\n",
               static_cast<unsigned long long>(id->datacenter_id),
               static_cast<unsigned long long>(id->worker_id),
               id->interface.empty() ? "no interface" : id->interface.c_str(),
               static_cast<long long>(id->pid));
  return id;
}

}  // namespace snowid::cli
