#include "etcd_settings.h"

#include <fmt/format.h>

#include "coordinator_options.h"
#include "text_file.h"

namespace snowid {

OptionRows<EtcdSettings> etcd_endpoint_rows() {
  return {
      {"etcd_endpoints",
       option::checked_text(&EtcdSettings::endpoints, parse_etcd_endpoints),
       option::shown(&EtcdSettings::endpoints),
       {}},
  };
}

OptionRows<EtcdSettings> etcd_access_rows() {
  using E = EtcdSettings;
  using option::text_row;
  return {
      text_row("etcd_user", &E::user),
      {"etcd_password", option::text(&E::password), option::secret(&E::password), {}},
      option::text_row("etcd_password_file", &E::password_file),
      text_row("etcd_tls_ca", &E::tls_ca),
      text_row("etcd_tls_cert", &E::tls_cert),
      text_row("etcd_tls_key", &E::tls_key),
  };
}

Result<EtcdOptions> etcd_options(const CoordinatorSetup& setup) {
  const CoordinatorOptions& config = setup.options;
  auto endpoints = parse_etcd_endpoints(config.etcd.endpoints);
  if (!endpoints.ok()) return endpoints.error();
  EtcdOptions o;
  static_cast<LeaseOptions&>(o) = lease_options(setup);
  o.endpoints = *endpoints;
  o.endpoints_text = config.etcd.endpoints;
  o.user = config.etcd.user;
  auto password = secret_or_file(config.etcd.password, config.etcd.password_file, "etcd_password");
  if (!password.ok()) return password.error();
  o.password = std::move(*password);
  o.tls_ca_file = config.etcd.tls_ca;
  o.tls_cert_file = config.etcd.tls_cert;
  o.tls_key_file = config.etcd.tls_key;
  return o;
}

Status check_etcd_setup(const CoordinatorSetup& setup) {
  auto etcd = etcd_options(setup);
  if (!etcd.ok()) return etcd.error();
  return check_lease_setup(setup);
}

Result<std::unique_ptr<Coordinator>> make_etcd_coordinator(const CoordinatorSetup& setup) {
  auto options = etcd_options(setup);
  if (!options.ok()) return options.error();
  return make_etcd_coordinator(*options);
}

}  // namespace snowid
