#include "service_config.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <optional>
#include <utility>

#include "coordinator_factory.h"
#include "database_url.h"
#include "node_id.h"
#include "percent_decode.h"
#include "snowid/clock.h"
#include "snowid/decode.h"
#include "snowid/ext/segment_store.h"

namespace snowid::server {

using std::chrono::milliseconds;
using option::shown;

OptionRows<ServiceConfig> batch_rows() {
  return {{"max_batch",
           option::number(&ServiceConfig::max_batch, std::uint32_t{1'000'000}),
           shown(&ServiceConfig::max_batch),
           {}}};
}

OptionRows<ServiceConfig> access_rows() {
  return {
      {"bearer_token",
       option::text(&ServiceConfig::bearer_token),
       option::secret(&ServiceConfig::bearer_token),
       {}},
      {"token_file",
       option::text(&ServiceConfig::token_file),
       shown(&ServiceConfig::token_file),
       {}},
      {"tokens_file",
       option::text(&ServiceConfig::tokens_file),
       shown(&ServiceConfig::tokens_file),
       {}},
      {"opaque_key_file",
       option::text(&ServiceConfig::opaque_key_file),
       shown(&ServiceConfig::opaque_key_file),
       {}},
      {"log_level",
       [](ServiceConfig& c, const std::string& v) -> Status {
         for (const char* level : {"trace", "debug", "info", "warn", "error", "critical", "off"}) {
           if (v == level) {
             c.log_level = v;
             return {};
           }
         }
         return invalid_argument(fmt::format(
             "unknown log level '{}'; expected trace, debug, info, warn, error, critical or off",
             v));
       },
       shown(&ServiceConfig::log_level),
       {}},
      {"log_format",
       [](ServiceConfig& c, const std::string& v) -> Status {
         if (v != "text" && v != "json") {
           return invalid_argument(
               fmt::format("unknown log format '{}'; expected text or json", v.substr(0, 40)));
         }
         c.log_format = v;
         return {};
       },
       shown(&ServiceConfig::log_format),
       {}},
  };
}

// segment_store shows the store in effect, whose default lies in state_dir.
OptionRows<ServiceConfig> segment_store_rows() {
  return {{"segment_store",
           [](ServiceConfig& c, const std::string& v) -> Status {
             c.segment.store = v;
             return {};
           },
           [](const ServiceConfig& c) -> std::string {
             const std::string url = segment_store_url(c);
             return url.empty() ? kSegmentStoreOff : redact_store_url(url);
           },
           {}}};
}


Result<std::string> read_token_file(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) {
    return invalid_argument(fmt::format("token_file {}: not a readable file", path));
  }
  std::ifstream in(path, std::ios::binary);
  std::string token;
  if (!in || !std::getline(in, token)) {
    return invalid_argument(fmt::format("token_file {}: cannot read a token from it", path));
  }
  if (!token.empty() && token.back() == '\r') token.pop_back();
  return token;
}

Status load_token_file(ServiceConfig& config) {
  if (!config.tokens_file.empty() && (!config.bearer_token.empty() || !config.token_file.empty())) {
    return invalid_argument(fmt::format(
        "tokens_file and {} are both set: give every token in tokens_file (one with admin = "
        "true opens what bearer_token did)",
        config.token_file.empty() ? "bearer_token" : "token_file"));
  }
  if (config.token_file.empty()) return {};
  if (!config.bearer_token.empty()) {
    return invalid_argument("bearer_token and token_file are both set: give the token once");
  }
  const std::string& path = config.token_file;
  auto read = read_token_file(path);
  if (!read.ok()) return read.error();
  std::string token = std::move(*read);
  if (token.empty())
    return invalid_argument(fmt::format("token_file {}: the token is empty", path));
  config.bearer_token = std::move(token);
  return {};
}

Result<std::unique_ptr<OpaqueIds>> load_opaque_ids(const ServiceConfig& config) {
  if (config.opaque_key_file.empty()) return std::unique_ptr<OpaqueIds>();
  auto loaded = OpaqueIds::from_key_file(config.opaque_key_file);
  if (!loaded.ok()) return invalid_argument("opaque_key_file " + loaded.error().message);
  return loaded;
}

namespace {

// The generator's options for node id `node_id` under `layout`.
GeneratorOptions generator_options(const GeneratorConfig& g, const Layout& layout,
                                   std::uint64_t node_id) {
  GeneratorOptions o;
  o.layout = layout;
  const NodeIdParts node = split_node_id(layout, node_id);
  o.datacenter_id = node.datacenter_id;
  o.worker_id = node.worker_id;
  o.clock_policy = g.clock_policy;
  o.max_wait = g.max_wait;
  o.max_drift = g.max_drift;
  o.max_start_wait = g.max_start_wait;
  o.sequence_start = g.sequence_start;
  o.state_file = std::filesystem::path(g.state_dir) / "generator.state";
  o.lock_state_directory = true;  // state_dir is this node's alone
  o.defer_start_wait = true;      // listen (and answer probes) while the clock catches up
  o.continue_above_mark = g.continue_above_mark;
  return o;
}

// The segment store's URL read as opening it will read it, so that
// --check-config refuses what a start would: every member of a ticket-server
// list but SQLite's (opening a SQLite file creates it). PostgreSQL and MySQL
// stores connect on first use, so this touches no database.
Status check_segment_store_url(const std::string& url) {
  if (has_control_character(url)) {
    auto refused = open_segment_store(url);  // refused before anything is opened
    if (!refused.ok()) {
      return invalid_argument(fmt::format("segment_store: {}", refused.error().message));
    }
  }
  std::string_view rest = url;
  while (!rest.empty()) {
    const std::size_t space = rest.find(' ');
    const std::string_view member = rest.substr(0, space);
    rest.remove_prefix(space == std::string_view::npos ? rest.size() : space + 1);
    if (member.empty() || (member.starts_with("sqlite://") && member.size() > 9)) continue;
    auto opened = open_segment_store(member);
    if (!opened.ok() && opened.error().code == ErrorCode::kInvalidArgument) {
      return invalid_argument(
          fmt::format("segment_store {}: {}", redact_store_url(url), opened.error().message));
    }
  }
  return {};
}

}  // namespace

Result<ResolvedConfig> resolve_service(const ServiceConfig& config,
                                       std::vector<std::string> advertised_addresses) {
  const GeneratorConfig& g = config.generator;
  auto layout = resolve_layout(g);
  if (!layout.ok()) return layout.error();
  // Known before any request: refused at start rather than answered 500.
  if (Status usable = usable_at(*layout, SystemClock::instance().now_fresh()); !usable.ok()) {
    return usable.error();
  }
  // A fixed node id is the generator's: checked here. A leased one is only
  // a preference, checked with the rest of the coordinator's settings below.
  const bool leased = coordinator_leases(config.coordinator.kind);
  std::optional<std::uint64_t> node_id;
  if (!leased) {
    auto fixed = configured_node_id(config.coordinator, *layout, g.datacenter_id, g.worker_id);
    if (!fixed.ok()) return fixed.error();
    node_id = *fixed;
  }
  const auto facts = layout_facts(*layout, milliseconds{0});
  if (g.datacenter_id > facts.max_datacenter_id) {
    return invalid_argument(fmt::format("datacenter_id {} is out of range 0..{}", g.datacenter_id,
                                        facts.max_datacenter_id));
  }
  if (g.worker_id > facts.max_worker_id) {
    return invalid_argument(
        fmt::format("worker_id {} is out of range 0..{}", g.worker_id, facts.max_worker_id));
  }
  if (Status net = check_net_options(config.net); !net.ok()) return net.error();
  if (config.max_batch == 0) return invalid_argument("max_batch must be at least 1");
  if (g.state_dir.empty()) return invalid_argument("state_dir must not be empty");
  if (!config.coordinator.peers.empty() && !config.net.tls_cert.empty()) {
    return invalid_argument("peers are asked over plain HTTP: not with tls_cert and tls_key");
  }
  if (config.audit.fsync && config.audit.log.empty()) {
    return invalid_argument("audit_fsync needs audit_log (the file to write the records to)");
  }
  if (!node_id) {
    auto preferred = configured_node_id(config.coordinator, *layout, g.datacenter_id, g.worker_id);
    if (!preferred.ok()) return preferred.error();
    node_id = *preferred;
  }

  ResolvedConfig resolved;
  resolved.layout = *layout;
  resolved.coordinator.options = config.coordinator;
  resolved.coordinator.layout = *layout;
  resolved.coordinator.node_id = *node_id;
  // What a claim publishes before the listeners bind; serve_until_signal()
  // advertises the bound addresses of every listener once they run.
  resolved.coordinator.advertised_addresses = std::move(advertised_addresses);
  if (Status store = check_coordinator(resolved.coordinator); !store.ok()) return store.error();

  resolved.generator = generator_options(g, *layout, *node_id);
  resolved.segment_url = segment_store_url(config);
  if (Status store = check_segment_store_url(resolved.segment_url); !store.ok()) {
    return store.error();
  }
  resolved.audit_log = config.audit.log;
  return resolved;
}

SegmentAllocatorOptions segment_allocator_options(const ServiceConfig& config) {
  SegmentAllocatorOptions o;
  o.prefetch_at_used_fraction = config.segment.prefetch_at;
  o.max_step = config.segment.max_step;
  o.request_timeout = config.segment.request_timeout;
  o.max_batch = config.max_batch;
  o.auto_create_tags = config.segment.auto_create;
  o.auto_create_step = config.segment.auto_create_step;
  o.store.call_timeout = config.segment.store_timeout;
  o.retry_max = config.segment.retry_max;
  o.retry_initial = std::min(o.retry_initial, o.retry_max);
  return o;
}

std::string segment_store_url(const ServiceConfig& config) {
  if (config.segment.store == kSegmentStoreOff) return "";
  if (!config.segment.store.empty()) return config.segment.store;
  // An absolute state_dir gives sqlite:///abs/segments.db (three slashes), a
  // relative one sqlite://rel/segments.db: both what open_segment_store reads.
  return "sqlite://" + (std::filesystem::path(config.generator.state_dir) / "segments.db").string();
}

std::string redact_store_url(std::string_view url) {
  // Read first as one URL, since a password may hold a space ("u:s pw@h"),
  // then, as a ticket-server set, each URL between spaces on its own.
  const std::string whole = hide_url_passwords(url);
  std::string out;
  for (std::size_t at = 0; at <= whole.size();) {
    const std::size_t space = std::min(whole.find(' ', at), whole.size());
    out += hide_url_passwords(std::string_view(whole).substr(at, space - at));
    if (space < whole.size()) out += ' ';
    at = space + 1;
  }
  return out;
}

}  // namespace snowid::server
