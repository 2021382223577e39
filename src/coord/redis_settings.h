// snowidd's Redis section (coordinator = "redis"): the options an operator
// sets, their rows in the option table, and how they become RedisOptions.
#pragma once

#include <memory>
#include <string>

#include "option_rows.h"
#include "redis_coordinator.h"
#include "snowid/coordinator.h"

namespace snowid {

struct CoordinatorSetup;

struct RedisSettings {
  static constexpr const char* kDefaultEndpoints = "127.0.0.1:6379";

  // "host:port" of one or more servers, comma-separated.
  std::string endpoints = kDefaultEndpoints;
  // Or the primary Redis Sentinel names: "host:port" of one or more
  // Sentinels, comma-separated, and the name they monitor it under; with
  // the Sentinels, redis_endpoints stays unset.
  std::string sentinels;
  std::string sentinel_master;
  // Optional AUTH to the Sentinels (their requirepass), or a file holding it.
  std::string sentinel_password;
  std::string sentinel_password_file;
  // Optional AUTH (see RedisOptions).
  std::string user;
  std::string password;
  // A file holding the password instead (its final newline not part of it).
  std::string password_file;
  unsigned database = 0;
};

// Rows of the option table, in table order: redis_endpoints, redis_sentinels,
// redis_sentinel_master, then (after the general coordination rows)
// redis_user, redis_password, redis_password_file, redis_database,
// redis_sentinel_password, redis_sentinel_password_file.
OptionRows<RedisSettings> redis_endpoint_rows();
OptionRows<RedisSettings> redis_access_rows();

// The Redis coordinator's options for `setup`.
Result<RedisOptions> redis_options(const CoordinatorSetup& setup);

// What validate() checks for Redis beyond each option's own syntax.
Status check_redis_setup(const CoordinatorSetup& setup);

Result<std::unique_ptr<Coordinator>> make_redis_coordinator(const CoordinatorSetup& setup);

}  // namespace snowid
