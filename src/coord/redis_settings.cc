#include "redis_settings.h"

#include "coordinator_options.h"
#include "text_file.h"

namespace snowid {

OptionRows<RedisSettings> redis_endpoint_rows() {
  return {
      {"redis_endpoints",
       option::checked_text(&RedisSettings::endpoints, parse_redis_endpoints),
       option::shown(&RedisSettings::endpoints),
       {}},
  };
}

OptionRows<RedisSettings> redis_access_rows() {
  using R = RedisSettings;
  return {
      option::text_row("redis_user", &R::user),
      {"redis_password", option::text(&R::password), option::secret(&R::password), {}},
      option::text_row("redis_password_file", &R::password_file),
      {"redis_database", option::number(&R::database, 15u), option::shown(&R::database), {}},
  };
}

Result<RedisOptions> redis_options(const CoordinatorSetup& setup) {
  const RedisSettings& config = setup.options.redis;
  auto endpoints = parse_redis_endpoints(config.endpoints);
  if (!endpoints.ok()) return endpoints.error();
  RedisOptions o;
  static_cast<LeaseOptions&>(o) = lease_options(setup);
  o.endpoints = *endpoints;
  o.endpoints_text = config.endpoints;
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
