#include "redis_settings.h"

#include <fmt/format.h>

#include "coordinator_options.h"
#include "redis_sentinel.h"
#include "text_file.h"

namespace snowid {

OptionRows<RedisSettings> redis_endpoint_rows() {
  return {
      {"redis_endpoints",
       option::checked_text(&RedisSettings::endpoints, parse_redis_endpoints),
       option::shown(&RedisSettings::endpoints),
       {}},
      {"redis_sentinels",
       option::checked_text(&RedisSettings::sentinels,
                            [](const std::string& v) -> Status {
                              if (v.empty()) return {};  // none: redis_endpoints
                              auto parsed = parse_redis_sentinels(v);
                              if (!parsed.ok()) return parsed.error();
                              return {};
                            }),
       option::shown(&RedisSettings::sentinels),
       {}},
      option::text_row("redis_sentinel_master", &RedisSettings::sentinel_master),
  };
}

OptionRows<RedisSettings> redis_access_rows() {
  using R = RedisSettings;
  return {
      option::text_row("redis_user", &R::user),
      {"redis_password", option::text(&R::password), option::secret(&R::password), {}},
      option::text_row("redis_password_file", &R::password_file),
      {"redis_database", option::number(&R::database, 15u), option::shown(&R::database), {}},
      {"redis_sentinel_password",
       option::text(&R::sentinel_password),
       option::secret(&R::sentinel_password),
       {}},
      option::text_row("redis_sentinel_password_file", &R::sentinel_password_file),
  };
}

namespace {

// The Sentinel options of `config` into `o`: the Sentinels replace the
// endpoints, and each Sentinel option needs the others.
Status sentinel_options(const RedisSettings& config, RedisOptions& o) {
  const bool sentinel_auth =
      !config.sentinel_password.empty() || !config.sentinel_password_file.empty();
  if (config.sentinels.empty()) {
    if (!config.sentinel_master.empty() || sentinel_auth) {
      const char* set = !config.sentinel_master.empty()     ? "redis_sentinel_master"
                        : !config.sentinel_password.empty() ? "redis_sentinel_password"
                                                            : "redis_sentinel_password_file";
      return invalid_argument(fmt::format(
          "{} is set but redis_sentinels is not: list the Sentinels, or remove it", set));
    }
    return {};
  }
  if (config.endpoints != RedisSettings::kDefaultEndpoints) {
    return invalid_argument(
        "redis_sentinels and redis_endpoints are both set: with Sentinels the primary is the "
        "server they name; remove redis_endpoints");
  }
  if (config.sentinel_master.empty()) {
    return invalid_argument(
        "redis_sentinels is set but redis_sentinel_master is not: give the name the Sentinels "
        "monitor the primary under (their `sentinel monitor NAME ...`)");
  }
  auto sentinels = parse_redis_sentinels(config.sentinels);
  if (!sentinels.ok()) return sentinels.error();
  auto password = secret_or_file(config.sentinel_password, config.sentinel_password_file,
                                 "redis_sentinel_password");
  if (!password.ok()) return password.error();
  o.endpoints.clear();
  o.sentinels = std::move(*sentinels);
  o.sentinel_master = config.sentinel_master;
  o.sentinel_password = std::move(*password);
  o.endpoints_text = "";  // shown as sentinel:MASTER@SENTINELS
  return {};
}

}  // namespace

Result<RedisOptions> redis_options(const CoordinatorSetup& setup) {
  const RedisSettings& config = setup.options.redis;
  auto endpoints = parse_redis_endpoints(config.endpoints);
  if (!endpoints.ok()) return endpoints.error();
  RedisOptions o;
  static_cast<LeaseOptions&>(o) = lease_options(setup);
  o.endpoints = *endpoints;
  o.endpoints_text = config.endpoints;
  if (Status sentinel = sentinel_options(config, o); !sentinel.ok()) return sentinel.error();
  o.user = config.user;
  auto password = secret_or_file(config.password, config.password_file, "redis_password");
  if (!password.ok()) return password.error();
  o.password = std::move(*password);
  o.database = config.database;
  return o;
}

Status check_redis_setup(const CoordinatorSetup& setup) {
  auto redis = redis_options(setup);
  if (!redis.ok()) return redis.error();
  return check_lease_setup(setup);
}

Result<std::unique_ptr<Coordinator>> make_redis_coordinator(const CoordinatorSetup& setup) {
  auto options = redis_options(setup);
  if (!options.ok()) return options.error();
  return make_redis_coordinator(*options);
}

}  // namespace snowid
