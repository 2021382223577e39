#include "coordinator_options.h"

#include <fmt/format.h>
#include <unistd.h>

#include "coordinator_factory.h"
#include "disposable_coordinator.h"
#include "endpoint.h"
#include "node_id.h"

namespace snowid {
namespace {

// "a", "a or b", "a, b or c".
std::string one_of(const std::vector<std::string>& words) {
  std::string out;
  for (std::size_t i = 0; i < words.size(); ++i) {
    if (i > 0) out += i + 1 == words.size() ? " or " : ", ";
    out += words[i];
  }
  return out;
}

// `coordinator = "a"`, `coordinator = "a" or "b"`: where an option of the
// stores for which `pick` holds applies.
template <typename Pick>
std::string where_coordinator(Pick pick) {
  std::vector<std::string> quoted;
  for (const std::string& name : coordinator_names()) {
    if (pick(name)) quoted.push_back(fmt::format("\"{}\"", name));
  }
  return "coordinator = " + one_of(quoted);
}

// Options of the stores that lease node ids.
std::string outside_leasing(const CoordinatorOptions& c) {
  return coordinator_leases(c.kind)
             ? ""
             : where_coordinator([](const std::string& name) { return coordinator_leases(name); });
}

// Options of one store's own section.
OptionScope<CoordinatorOptions> store_is(std::string name) {
  return [name](const CoordinatorOptions& c) {
    return c.kind == name ? std::string() : fmt::format("coordinator = \"{}\"", name);
  };
}

// `rows` restricted to where `scope` holds.
OptionRows<CoordinatorOptions> within(OptionRows<CoordinatorOptions> rows,
                                      const OptionScope<CoordinatorOptions>& scope) {
  for (auto& row : rows) row.outside_scope = scope;
  return rows;
}

OptionRows<CoordinatorOptions> kind_rows() {
  return {
      {"coordinator",
       [](CoordinatorOptions& c, const std::string& v) -> Status {
         for (const std::string& name : coordinator_names()) {
           if (v == name) {
             c.kind = v;
             return {};
           }
         }
         return invalid_argument(
             fmt::format("unknown coordinator '{}'; expected {}", v, one_of(coordinator_names())));
       },
       option::shown(&CoordinatorOptions::kind),
       {}},
  };
}

OptionRows<CoordinatorOptions> shared_rows() {
  using C = CoordinatorOptions;
  return {
      {"peers",
       option::checked_text(&C::peers,
                            [](const std::string& v) -> Status {
                              std::size_t start = 0;
                              while (start < v.size()) {
                                const auto comma = v.find(',', start);
                                const std::string peer = v.substr(
                                    start, comma == std::string::npos ? v.npos : comma - start);
                                if (auto e = parse_endpoint(peer); !e.ok()) return e.error();
                                if (comma == std::string::npos) break;
                                start = comma + 1;
                              }
                              return {};
                            }),
       option::shown(&C::peers), [](const C& c) { return outside_fixed_node_id(c); }},
      {"cluster", option::text(&C::cluster), option::shown(&C::cluster), outside_leasing},
      {"node_id_from_hostname",
       option::boolean(&C::node_id_from_hostname),
       option::shown(&C::node_id_from_hostname),
       {}},
      {"node_id_policy",
       [](C& c, const std::string& v) -> Status {
         if (v != "prefer" && v != "require" && v != kDisposablePolicy) {
           return invalid_argument(fmt::format(
               "unknown node_id_policy '{}'; expected prefer, require or disposable", v));
         }
         c.node_id_policy = v;
         return {};
       },
       option::shown(&C::node_id_policy), outside_leasing},
      {"lease_ttl_s",
       [](C& c, const std::string& v) -> Status {
         auto n = parse_unsigned(v, 3600, "seconds");
         if (!n.ok()) return n.error();
         c.lease_ttl = std::chrono::seconds{static_cast<long long>(*n)};
         return {};
       },
       option::shown(&C::lease_ttl), outside_leasing},
      {"lease_safety_margin_ms", option::duration(&C::lease_safety_margin),
       option::shown(&C::lease_safety_margin), outside_leasing},
      // Leased ids compare clocks with the peers in the store; a fixed id
      // with the peers listed.
      {"max_peer_clock_offset_ms", option::duration(&C::max_peer_clock_offset),
       option::shown(&C::max_peer_clock_offset),
       [](const C& c) -> std::string {
         if (coordinator_leases(c.kind) || !c.peers.empty()) return "";
         return where_coordinator(
                    [](const std::string& name) { return coordinator_leases(name); }) +
                " or peers listed";
       }},
      {"share_id_space", option::boolean(&C::share_id_space), option::shown(&C::share_id_space),
       outside_leasing},
      {"claim_timeout_ms", option::duration(&C::claim_timeout), option::shown(&C::claim_timeout),
       outside_leasing},
      {"store_request_timeout_ms", option::positive_duration(&C::store_request_timeout),
       option::shown(&C::store_request_timeout), outside_leasing},
  };
}

}  // namespace

OptionRows<CoordinatorOptions> coordinator_option_rows() {
  using C = CoordinatorOptions;
  return concat<C>({
      kind_rows(),
      within(lift(&C::etcd, etcd_endpoint_rows()), store_is("etcd")),
      within(lift(&C::redis, redis_endpoint_rows()), store_is("redis")),
      within(lift(&C::zookeeper, zookeeper_endpoint_rows()), store_is("zookeeper")),
      within(lift(&C::postgres, postgres_endpoint_rows()), store_is("postgres")),
      within(lift(&C::mysql, mysql_endpoint_rows()), store_is("mysql")),
      shared_rows(),
      within(lift(&C::etcd, etcd_access_rows()), store_is("etcd")),
      within(lift(&C::redis, redis_access_rows()), store_is("redis")),
      within(lift(&C::zookeeper, zookeeper_access_rows()), store_is("zookeeper")),
  });
}

std::string outside_fixed_node_id(const CoordinatorOptions& options) {
  return !coordinator_leases(options.kind)
             ? ""
             : where_coordinator([](const std::string& name) { return !coordinator_leases(name); });
}

Result<std::uint64_t> configured_node_id(const CoordinatorOptions& options, const Layout& layout,
                                         std::uint64_t datacenter_id, std::uint64_t worker_id) {
  if (!options.node_id_from_hostname) {
    return join_node_id(layout, {.datacenter_id = datacenter_id, .worker_id = worker_id});
  }
  if (!coordinator_leases(options.kind) && (datacenter_id != 0 || worker_id != 0)) {
    // The StatefulSet ordinal is the node id, as with a leased one, without a store.
    return invalid_argument(
        "node_id_from_hostname takes the node id from the hostname: do not also set "
        "datacenter_id or worker_id");
  }
  // The node id a Kubernetes StatefulSet pod's hostname names ("snowid-3" -> 3).
  char host[256] = {};
  if (gethostname(host, sizeof host - 1) != 0) {
    return invalid_argument("node_id_from_hostname: cannot read the hostname");
  }
  auto ordinal = node_id_from_pod_name(host, node_id_count(layout));
  if (!ordinal.ok()) {
    return invalid_argument(fmt::format("node_id_from_hostname: {}", ordinal.error().message));
  }
  return ordinal;
}

LeaseOptions lease_options(const CoordinatorSetup& setup) {
  const CoordinatorOptions& config = setup.options;
  LeaseOptions o;
  o.cluster = config.cluster;
  o.layout = setup.layout;
  o.preferred_node_id = setup.node_id;
  o.require_preferred_node_id = config.node_id_policy == "require";
  o.lease_ttl = config.lease_ttl;
  o.safety_margin = config.lease_safety_margin;
  o.max_peer_clock_offset = config.max_peer_clock_offset;
  o.share_id_space = config.share_id_space;
  o.request_timeout = config.store_request_timeout;
  o.advertised_addresses = setup.advertised_addresses;
  return o;
}

Status check_lease_setup(const CoordinatorSetup& setup) {
  const CoordinatorOptions& config = setup.options;
  if (config.lease_ttl < std::chrono::seconds{2}) {
    return invalid_argument("lease_ttl_s must be at least 2");
  }
  if (config.lease_safety_margin >= config.lease_ttl) {
    return invalid_argument(fmt::format("lease_safety_margin_ms {} must be below lease_ttl_s {}",
                                        config.lease_safety_margin.count(),
                                        config.lease_ttl.count()));
  }
  if (config.store_request_timeout > config.lease_ttl) {
    // A renewal that may take longer than the lease can never keep it.
    return invalid_argument(
        fmt::format("store_request_timeout_ms {} must not exceed lease_ttl_s {}",
                    config.store_request_timeout.count(), config.lease_ttl.count()));
  }
  return {};
}

std::optional<std::string> lease_timing_warning(const CoordinatorOptions& options) {
  const auto renewal_period =
      std::chrono::duration_cast<std::chrono::milliseconds>(options.lease_ttl) / 3;
  if (options.store_request_timeout <= renewal_period) return std::nullopt;
  return fmt::format(
      "store_request_timeout_ms {} is more than a third of lease_ttl_s {} (the renewal period, "
      "{} ms): a renewal that waits that long on one store member that stopped answering leaves "
      "too little of the lease to try another, and this node loses its claim; set "
      "store_request_timeout_ms to at most {}",
      options.store_request_timeout.count(), options.lease_ttl.count(), renewal_period.count(),
      renewal_period.count());
}

}  // namespace snowid
