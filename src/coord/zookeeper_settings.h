// snowidd's ZooKeeper section (coordinator = "zookeeper"): the options an
// operator sets, their rows in the option table, and how they become
// ZooKeeperOptions.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "option_rows.h"
#include "snowid/coordinator.h"
#include "zookeeper_coordinator.h"

namespace snowid {

struct CoordinatorSetup;

struct ZooKeeperSettings {
  // "host:port" of the ensemble's servers, comma-separated.
  std::string endpoints = "127.0.0.1:2181";
  // Optional digest authentication (see ZooKeeperOptions).
  std::string user;
  std::string password;
  // A file holding the password instead (its final newline not part of it).
  std::string password_file;
  // The ensemble's tickTime (ZooKeeper's default is 2000 ms).
  std::chrono::milliseconds tick_time{2000};
};

// Rows of the option table, in table order: zookeeper_endpoints, then
// (after the general coordination rows) zookeeper_user, zookeeper_password,
// zookeeper_password_file,
// zookeeper_tick_ms.
OptionRows<ZooKeeperSettings> zookeeper_endpoint_rows();
OptionRows<ZooKeeperSettings> zookeeper_access_rows();

// The ZooKeeper coordinator's options for `setup`.
Result<ZooKeeperOptions> zookeeper_options(const CoordinatorSetup& setup);

// What validate() checks for ZooKeeper beyond each option's own syntax.
Status check_zookeeper_setup(const CoordinatorSetup& setup);

Result<std::unique_ptr<Coordinator>> make_zookeeper_coordinator(const CoordinatorSetup& setup);

}  // namespace snowid
