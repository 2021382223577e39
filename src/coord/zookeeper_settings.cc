#include "zookeeper_settings.h"

#include "coordinator_options.h"
#include "text_file.h"

namespace snowid {

OptionRows<ZooKeeperSettings> zookeeper_endpoint_rows() {
  return {
      {"zookeeper_endpoints",
       option::checked_text(&ZooKeeperSettings::endpoints, parse_zookeeper_endpoints),
       option::shown(&ZooKeeperSettings::endpoints),
       {}},
  };
}

OptionRows<ZooKeeperSettings> zookeeper_access_rows() {
  using Z = ZooKeeperSettings;
  return {
      option::text_row("zookeeper_user", &Z::user),
      {"zookeeper_password", option::text(&Z::password), option::secret(&Z::password), {}},
      option::text_row("zookeeper_password_file", &Z::password_file),
      {"zookeeper_tick_ms",
       option::positive_duration(&Z::tick_time),
       option::shown(&Z::tick_time),
       {}},
  };
}

Result<ZooKeeperOptions> zookeeper_options(const CoordinatorSetup& setup) {
  const ZooKeeperSettings& config = setup.options.zookeeper;
  auto endpoints = parse_zookeeper_endpoints(config.endpoints);
  if (!endpoints.ok()) return endpoints.error();
  ZooKeeperOptions o;
  static_cast<LeaseOptions&>(o) = lease_options(setup);
  o.endpoints = *endpoints;
  o.endpoints_text = config.endpoints;
  o.user = config.user;
  auto password = secret_or_file(config.password, config.password_file, "zookeeper_password");
  if (!password.ok()) return password.error();
  o.password = std::move(*password);
  o.tick_time = config.tick_time;
  return o;
}

Status check_zookeeper_setup(const CoordinatorSetup& setup) {
  auto zookeeper = zookeeper_options(setup);
  if (!zookeeper.ok()) return zookeeper.error();
  Status lease = check_lease_setup(setup);
  if (!lease.ok()) return lease;
  return check_zookeeper_options(*zookeeper);
}

Result<std::unique_ptr<Coordinator>> make_zookeeper_coordinator(const CoordinatorSetup& setup) {
  auto options = zookeeper_options(setup);
  if (!options.ok()) return options.error();
  return make_zookeeper_coordinator(*options);
}

}  // namespace snowid
