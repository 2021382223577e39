// snowidd's etcd section (coordinator = "etcd"): the options an operator
// sets, their rows in the option table, and how they become EtcdOptions.
#pragma once

#include <memory>
#include <string>

#include "etcd_coordinator.h"
#include "option_rows.h"
#include "snowid/coordinator.h"

namespace snowid {

struct CoordinatorSetup;

struct EtcdSettings {
  // "host:port" of one or more members, comma-separated.
  std::string endpoints = "127.0.0.1:2379";
  // Optional authentication and TLS (see EtcdOptions).
  std::string user;
  std::string password;
  // A file holding the password instead (its final newline not part of it).
  std::string password_file;
  std::string tls_ca;
  std::string tls_cert;
  std::string tls_key;
};

// Rows of the option table, in table order: etcd_endpoints, then (after
// the general coordination rows) etcd_user ... etcd_tls_key.
OptionRows<EtcdSettings> etcd_endpoint_rows();
OptionRows<EtcdSettings> etcd_access_rows();

// The etcd coordinator's options for `setup`.
Result<EtcdOptions> etcd_options(const CoordinatorSetup& setup);

// What validate() checks for etcd beyond each option's own syntax.
Status check_etcd_setup(const CoordinatorSetup& setup);

Result<std::unique_ptr<Coordinator>> make_etcd_coordinator(const CoordinatorSetup& setup);

}  // namespace snowid
