// snowidd: the snowid ID server.
//
// Start-up: defaults, then SNOWID_<OPTION> variables, then --config FILE,
// then flags; validate; raise the open-file limit; open the audit log if
// audit_log is set (a path that cannot be written stops the start: exit 2);
// lock the state directory and apply the clock policy to the persisted
// high-water mark, or to the audit log's latest ID if it lies above (a state
// directory restored from an older copy, audit_start.h); open the segment store
// unless segment_store is "off"; listen; log one line that says what the node
// is. SIGTERM/SIGINT: stop accepting, let in-flight requests finish, write the
// exact high-water mark, exit 0.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <csignal>
#include <filesystem>
#include <functional>
#include <optional>
#include <thread>
#include <vector>

#include "audit_format.h"
#include "audit_log.h"
#include "audit_start.h"
#include "claim_grpc_health.h"
#include "claim_responder.h"
#include "config.h"
#include "descriptor_budget.h"
#include "grpc_runtime.h"
#include "json_log.h"
#include "listener.h"
#include "listeners.h"
#include "option_help.h"
#include "peer_check.h"
#include "process_metrics.h"
#include "service.h"
#include "range_memory.h"
#include "tag_audit_file.h"
#include "time_text.h"

extern char** environ;

namespace snowid::server {
namespace {

namespace asio = boost::asio;

constexpr int kExitFailure = 1;
constexpr int kExitUsage = 2;

std::string flag_name(const std::string& option) {
  std::string flag = "--" + option;
  for (char& c : flag) {
    if (c == '_') c = '-';
  }
  return flag;
}

int fail(int code, const std::string& message) {
  std::string line = message;
  for (char& c : line) {
    if (c == '\n') c = ' ';
  }
  std::fprintf(stderr, "snowidd: %s\n", line.c_str());
  return code;
}

// Every 100 ms, the service's upkeep: raises the persisted high-water mark
// (or, in cluster mode, the ceiling granted by the reservation) ahead of use,
// so that requests never wait on the disk or on etcd; checks that the state
// directory is still this node's; follows re-claims; and checks whether a
// failing audit log has room again.
void keep_maintaining(asio::steady_timer& timer, IdService& service) {
  timer.expires_after(std::chrono::milliseconds{100});
  timer.async_wait([&timer, &service](const boost::system::error_code& ec) {
    if (ec) return;
    service.maintain();
    keep_maintaining(timer, service);
  });
}

// On each SIGHUP, tokens_file read again (access_tokens.h); a file that does
// not read leaves the tokens in force and logs why.
void keep_reloading_tokens(asio::signal_set& hangups, IdService& service) {
  hangups.async_wait([&hangups, &service](const boost::system::error_code& ec, int) {
    if (ec) return;
    spdlog::info("received SIGHUP: reading tokens_file again");
    service.reload_tokens();
    keep_reloading_tokens(hangups, service);
  });
}

// Every kDescriptorReplanPeriod: re-reads the open-file limit and, if it
// changed, gives each listener its new share (descriptor_budget.h).
void keep_replanning(asio::steady_timer& timer, DescriptorBudget& budget,
                     const std::vector<std::unique_ptr<Listener>>& listeners) {
  timer.expires_after(kDescriptorReplanPeriod);
  timer.async_wait([&timer, &budget, &listeners](const boost::system::error_code& ec) {
    if (ec) return;
    if (auto next = replan_descriptors(budget)) {
      spdlog::warn("the open-file limit changed from {} to {}: descriptors: {}", budget.limit,
                   next->limit, next->describe());
      budget = std::move(*next);
      for (const auto& listener : listeners) {
        listener->set_connection_limit(budget.connections_for(listener->protocol()));
      }
    }
    keep_replanning(timer, budget, listeners);
  });
}

// An exit code for main(), or nullopt to go on with the next step.
using Exit = std::optional<int>;

// The log's level and format from the configuration, and what loading it
// found worth saying: Kubernetes' service links ignored, a config file that
// sets nothing.
void set_up_logging(const ServerConfig& config, const std::vector<std::string>& service_links,
                    const std::string& config_file, std::size_t options_in_file) {
  spdlog::set_level(spdlog::level::from_str(config.log_level));
  if (config.log_format == "json") {
    spdlog::set_formatter(std::make_unique<JsonLogFormatter>());
  } else {
    spdlog::set_pattern("%Y-%m-%dT%H:%M:%S.%eZ %l %v", spdlog::pattern_time_type::utc);
  }
  if (!service_links.empty()) {
    spdlog::info(
        "ignored environment variables {}: Kubernetes' service links of a Service named snowid, "
        "not options",
        fmt::join(service_links, ", "));
  }
  if (!config_file.empty() && options_in_file == 0) {
    spdlog::warn(
        "config file {} sets no option: every option has its default, or the value of "
        "its SNOWID_ variable or flag",
        config_file);
  }
}

// Step 1. Defaults, SNOWID_ variables, --config, flags, token_file; validated
// and resolved once (layout, node id, generator, coordinator, segment store);
// the opaque ID key read from opaque_key_file, before anything is logged.
// Ends the process (Exit) for --help, --check-config and bad input.
Exit load_configuration(int argc, char** argv, ServerConfig& config,
                        std::optional<ResolvedConfig>& resolved,
                        std::unique_ptr<OpaqueIds>& opaque_ids,
                        std::unique_ptr<TokenSource>& tokens) {
  CLI::App app{"snowidd: the snowid ID server", "snowidd"};
  std::string config_file;
  bool check_config = false;
  app.add_option("--config", config_file, "TOML configuration file (see snowid.example.toml)");
  app.set_version_flag("--version", fmt::format("snowid {}", kVersion),
                       "Print the version (snowid <version>) and exit");
  app.add_flag("--check-config", check_config,
               "Validate the configuration, print the effective values and exit");
  // One flag per configuration option, with its type and meaning from
  // snowid.example.toml; `defaults[i].first` names flag_values[i].
  const ServerConfig default_config;
  const auto defaults = describe(default_config);
  std::vector<std::string> flag_values(defaults.size());
  for (std::size_t i = 0; i < defaults.size(); ++i) {
    const auto& [name, value] = defaults[i];
    const OptionHelp* help = option_help(name);
    CLI::Option* flag =
        app.add_option(flag_name(name), flag_values[i],
                       fmt::format("{} (default: {})", help != nullptr ? help->meaning : name,
                                   value.empty() ? "none" : value));
    if (help != nullptr) flag->type_name(std::string(help->type));
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);
    return fail(kExitUsage, e.what());
  }

  std::vector<std::string> service_links;
  Status s = apply_environment(config, environ, &service_links);
  std::size_t options_in_file = 0;
  if (s.ok() && !config_file.empty()) s = apply_toml_file(config, config_file, &options_in_file);
  for (std::size_t i = 0; s.ok() && i < defaults.size(); ++i) {
    const std::string flag = flag_name(defaults[i].first);
    if (app.count(flag) > 0) {
      s = apply_option(config, defaults[i].first, flag_values[i], "flag " + flag);
    }
  }
  if (s.ok()) s = load_token_file(config);
  if (!s.ok()) return fail(kExitUsage, s.error().message);
  Result<ResolvedConfig> checked = resolve_config(config);
  if (!checked.ok()) return fail(kExitUsage, checked.error().message);
  resolved = std::move(*checked);
  // The key file must load, for --check-config too; its key is never shown.
  auto opaque = load_opaque_ids(config);
  if (!opaque.ok()) return fail(kExitUsage, opaque.error().message);
  opaque_ids = std::move(*opaque);
  // The tokens file must read, for --check-config too; no token is shown.
  if (!config.tokens_file.empty()) {
    auto read = TokenSource::from_file(config.tokens_file);
    if (!read.ok()) return fail(kExitUsage, read.error().message);
    tokens = std::move(*read);
  }
  if (check_config) {
    std::fputs(effective_config_toml(config).c_str(), stdout);
    return 0;
  }

  set_up_logging(config, service_links, config_file, options_in_file);
  return std::nullopt;
}

// What serves requests, opened in this order and closed in the reverse one.
struct Subsystems {
  DescriptorBudget descriptors;
  // A cluster node's HTTP address while it claims its node id (step 2),
  // closed just before the listeners start (step 3).
  std::unique_ptr<ClaimResponder> claim_responder;
  // The same for the gRPC address: its health service.
  std::unique_ptr<ClaimGrpcHealth> claim_grpc_health;
  // Segment mode: opened after the generator, handed to the service, which
  // closes it after the listeners stopped.
  std::unique_ptr<SegmentAllocator> segments;
  // The tags' settings on their own store connection (null: see why).
  std::unique_ptr<tags::TagBook> tag_book;
  std::string tag_book_missing;
  // Read with the configuration (step 1); handed to the service.
  std::unique_ptr<OpaqueIds> opaque_ids;
  // tokens_file's tokens, read with the configuration; handed to the service.
  std::unique_ptr<TokenSource> tokens;
  std::unique_ptr<IdService> service;
};

// The open-file limit raised and shared between the listeners, logged.
DescriptorBudget plan_listener_descriptors(const ServerConfig& config) {
  // Raises the soft open-file limit and shares it between the listeners.
  DescriptorBudget descriptors = plan_descriptors(wanted_connections(config));
  if (descriptors.reduced) {
    spdlog::warn(
        "descriptors: {}; the listeners' connection limits (max_connections, "
        "grpc_max_connections, …) do not fit: raise the limit (ulimit -n, LimitNOFILE=) to allow "
        "them",
        descriptors.describe());
  } else {
    spdlog::info("descriptors: {}", descriptors.describe());
  }
  return descriptors;
}

// The tags' settings, administration and business IDs, on a connection of
// their own to the segment store: a store that keeps no settings (a
// ticket-server set, Leaf's layout) leaves them off, said once.
Exit open_tag_book(const ServiceConfig& config, const std::string& segment_url, Subsystems& out) {
  tags::TagBookOptions options;
  options.width_warning_fraction = config.segment.business_width_warning;
  options.refresh = config.segment.tag_refresh;
  options.range_memory =
      std::filesystem::path(config.generator.state_dir) / kBusinessRangeMemoryFile;
  options.store_name = segment::segment_store_name(segment_url);
  if (!config.segment.tag_audit_log.empty()) {
    auto audit = tags::open_tag_audit_file(config.segment.tag_audit_log);
    if (!audit.ok()) return fail(kExitUsage, audit.error().message);
    options.audit = std::move(*audit);
  }
  SegmentStoreOptions store_options;
  store_options.call_timeout = config.segment.store_timeout;
  auto store = open_segment_store(segment_url, store_options);
  if (!store.ok()) {
    return fail(kExitFailure, fmt::format("segment_store {}: {}", redact_store_url(segment_url),
                                          store.error().message));
  }
  auto book = tags::TagBook::open(std::move(*store), std::move(options));
  if (!book.ok() && book.error().code != ErrorCode::kInvalidArgument) {
    // A damaged range memory stops the start rather than being forgotten.
    return fail(kExitFailure, book.error().message);
  }
  if (!book.ok()) {
    out.tag_book_missing = book.error().message;
    spdlog::info("tag administration and business IDs are off: {}", out.tag_book_missing);
    return std::nullopt;
  }
  out.tag_book = std::move(*book);
  return std::nullopt;
}

// Segment mode's allocator, if segment mode is on.
Exit open_segments(const ServiceConfig& config, const ResolvedConfig& resolved, Subsystems& out) {
  const std::string& segment_url = resolved.segment_url;
  if (!segment_url.empty()) {
    SegmentAllocatorOptions segment_options = segment_allocator_options(config);
    // The range memory lives in the state directory, which the node holds
    // locked (a fixed one through its state file, a leased one through
    // ClusterMarks::hold_state_directory).
    segment_options.range_memory =
        std::filesystem::path(config.generator.state_dir) / kSegmentRangeMemoryFile;
    segment_options.report = [](bool error, std::string_view message) {
      if (error) {
        spdlog::error("{}", message);
      } else {
        spdlog::warn("{}", message);
      }
    };
    auto opened = SegmentAllocator::open(segment_url, std::move(segment_options));
    if (!opened.ok()) {
      const bool bad_input = opened.error().code == ErrorCode::kInvalidArgument;
      return fail(bad_input ? kExitUsage : kExitFailure,
                  fmt::format("segment_store {}: {}", redact_store_url(segment_url),
                              opened.error().message));
    }
    out.segments = std::move(*opened);
    return open_tag_book(config, segment_url, out);
  }
  return std::nullopt;
}

// Step 2. The descriptor budget, the audit log, the node (its node id,
// state directory and generator), the peer check, the segment store.
Exit open_subsystems(const ServerConfig& config, const ResolvedConfig& resolved, Subsystems& out) {
  out.descriptors = plan_listener_descriptors(config);

  // With a file size limit (RLIMIT_FSIZE), a write past it fails with EFBIG
  // instead of killing the process: the audit log then answers 503.
  std::signal(SIGXFSZ, SIG_IGN);
  // SIGHUP rereads tokens_file once serving (keep_reloading_tokens); until
  // then it must not end the process.
  std::signal(SIGHUP, SIG_IGN);
  std::unique_ptr<AuditLog> audit_log;
  if (!config.audit.log.empty()) {
    auto opened = AuditLog::open(config.audit.log, config.audit.fsync);
    if (!opened.ok()) return fail(kExitUsage, opened.error().message);
    audit_log = std::move(*opened);
  }

  std::error_code ec;
  const std::string& state_dir = config.generator.state_dir;
  std::filesystem::create_directories(state_dir, ec);
  if (ec) {
    return fail(kExitFailure,
                fmt::format("cannot create state directory {}: {}", state_dir, ec.message()));
  }
  // gRPC first: once /healthz answers, the gRPC health service does too.
  // An address that cannot be bound ends the start here, before a node id
  // is claimed (a claim the node could not use would hold its id for a
  // lease and count as a takeover at the next start).
  auto grpc_health = ClaimGrpcHealth::start(config, config.grpc, out.descriptors);
  if (!grpc_health.ok()) {
    return fail(kExitUsage, grpc_health.error().message + "; no node id was claimed");
  }
  out.claim_grpc_health = std::move(*grpc_health);
  auto responder = ClaimResponder::start(config, config.http, out.descriptors);
  if (!responder.ok()) {
    return fail(kExitUsage, responder.error().message + "; no node id was claimed");
  }
  out.claim_responder = std::move(*responder);
  // The audit log's latest ID of this node is a floor too: a state
  // directory restored from an older copy is started above it, or refused.
  auto floor = audit_floor(config, resolved);
  if (!floor.ok()) return fail(kExitFailure, floor.error().message);
  ResolvedConfig node_config = resolved;
  node_config.generator.start_above =
      std::max(node_config.generator.start_above, floor->start_above);
  auto node = Node::start(node_config);
  if (!node.ok()) {
    // A locked state directory (kStateLocked) names the directory and its
    // holder itself.
    const Error& error = node.error();
    const std::string why =
        floor->reason.empty() ? "" : fmt::format(" (the floor: {})", floor->reason);
    return fail(error.code == ErrorCode::kInvalidArgument ? kExitUsage : kExitFailure,
                error.message + why);
  }
  if (!config.coordinator.peers.empty()) {
    const GeneratorOptions& node_options = (*node)->generator().options();
    // Peers are asked for /v1/info, which any of tokens_file's tokens opens.
    ServiceConfig asking = config;
    if (out.tokens) asking.bearer_token = out.tokens->current()->tokens().front().secret;
    Status peers = check_static_peers(asking, node_options.datacenter_id, node_options.worker_id);
    if (!peers.ok()) return fail(kExitFailure, peers.error().message);
  }
  if (Exit segments = open_segments(config, resolved, out); segments) return segments;
  if (audit_log) {
    const GeneratorOptions& options = (*node)->generator().options();
    Status header =
        audit_log->write_header(options.layout, options.datacenter_id, options.worker_id);
    if (!header.ok()) return fail(kExitFailure, header.error().message);
  }
  out.service = std::make_unique<IdService>(
      config, IdService::Parts{std::move(*node), std::move(out.segments), std::move(audit_log),
                               std::move(out.opaque_ids), configured_endpoints(config),
                               std::move(out.tokens), std::move(out.tag_book),
                               std::move(out.tag_book_missing)});
  out.service->add_metrics_source(std::make_shared<ProcessMetrics>());
  return std::nullopt;
}

// Which tokens a request needs: "none", "one", or tokens_file's count.
std::string tokens_text(const ServerConfig& config, const IdService& service) {
  if (!service.tokens_required()) return "none";
  if (config.tokens_file.empty()) return "one";
  return fmt::format("{} from {}", service.token_count(), config.tokens_file);
}

// The one line that says what the node is, and warnings about its start.
// `bound`: "http 127.0.0.1:8080", "grpc …", one per listener.
void log_start(const ServerConfig& config, const ResolvedConfig& resolved, IdService& service,
               const std::vector<std::string>& bound) {
  const Layout& layout = service.layout();
  const Generator& generator = service.generator();
  const auto stats = generator.stats();
  const AuditLog* audit = service.audit_log();
  const std::string audit_text =
      audit ? fmt::format("{} (incarnation {}, fsync {})", audit->path(),
                          audit::format_incarnation(audit->incarnation()),
                          audit->fsync() ? "on" : "off")
            : "off";
  const CoordinatorStats store = service.node().coordinator_stats();
  const std::string identity = service.node().leased()
                                   ? fmt::format(
                                         "claimed from {} cluster {} at {}, starting above {} (the "
                                         "highest of the store's floor, this node's own mark "
                                         "and its audit log)",
                                         store.store, store.cluster, store.endpoints,
                                         format_time(generator.options().start_above))
                                   : store.store;
  const std::string mark =
      service.node().leased()
          ? fmt::format("reservation {} in {}", format_time(stats.external_ceiling), store.store)
          : fmt::format("high-water mark {} in {} ({})", format_time(stats.high_water),
                        generator.options().state_file.string(),
                        stats.mark_at_start ? "found " + format_time(*stats.mark_at_start)
                                            : std::string("first start: nothing was at that path"));
  const std::string& segment_url = resolved.segment_url;
  spdlog::info(
      "snowidd {} starting: layout {}, datacenter {}, worker {} ({}), clock policy {} (max_wait {} "
      "ms, max_drift {} ms), {}, {}, segment store {}, audit log {}, opaque IDs {}, tokens {}",
      kVersion, describe(layout), generator.options().datacenter_id, generator.options().worker_id,
      identity, clock_policy_name(config.generator.clock_policy), config.generator.max_wait.count(),
      config.generator.max_drift.count(), mark, fmt::join(bound, ", "),
      segment_url.empty() ? "off" : redact_store_url(segment_url), audit_text,
      service.opaque_ids_enabled() ? "on" : "off", tokens_text(config, service));
  const auto wall = SystemClock::instance().now_fresh();
  if (config.generator.clock_policy == ClockPolicy::kWait && !service.node().leased() &&
      stats.mark_at_start && *stats.mark_at_start >= wall) {
    spdlog::warn(
        "the clock is {} ms behind the high-water mark {} found in {}: the {} policy waits "
        "until {} before issuing; meanwhile /healthz answers 200, /readyz and ID requests 503",
        (*stats.mark_at_start - wall).count(), format_time(*stats.mark_at_start),
        generator.options().state_file.string(), clock_policy_name(config.generator.clock_policy),
        format_time(*stats.mark_at_start + layout.time_unit));
  }
  if (stats.logical_clock_lead.count() > 0) {
    spdlog::warn(
        "continue_above_mark: the clock is behind the high-water mark; IDs are issued "
        "on a logical clock {} ms ahead of the wall clock until a restart without it",
        stats.logical_clock_lead.count());
  }
  if (auto warning = layout_facts(layout, SystemClock::instance().now_fresh()).warning) {
    spdlog::warn("{}", *warning);
  }
  if (service.node().leased()) {
    if (auto warning = lease_timing_warning(config.coordinator)) spdlog::warn("{}", *warning);
  }
}

// Step 3. Starts every listener, then runs the upkeep timer until SIGTERM or
// SIGINT; then stops accepting, lets requests under way finish (at most a
// second) and stops the listeners.
Exit serve_until_signal(const ServerConfig& config, const ResolvedConfig& resolved,
                        Subsystems& subsystems) {
  IdService& service = *subsystems.service;
  // The main thread runs HTTP's acceptor, signals and timers; connections
  // and calls live on each listener's own threads.
  asio::io_context io(1);
  std::vector<std::unique_ptr<Listener>> listeners = make_listeners(io, service, config);
  // Stops every listener. First the handlers still queued on `io` run (the
  // acceptors' closes that stop_accepting() posted, when draining found
  // nothing open and stopped `io` at once, and the accepts they cancel): an
  // accept left pending would hold a socket of a connection thread's
  // io_context past that io_context's end.
  auto stop_listeners = [&] {
    for (auto& listener : listeners) listener->stop_accepting();
    io.restart();
    io.poll();
    for (auto& listener : listeners) listener->stop();
  };
  // Frees the HTTP and gRPC addresses for their listeners.
  subsystems.claim_responder.reset();
  subsystems.claim_grpc_health.reset();
  std::vector<std::string> bound;
  for (auto& listener : listeners) {
    auto endpoint = listener->start(subsystems.descriptors);
    if (!endpoint.ok()) {
      const bool bad_input = endpoint.error().code == ErrorCode::kInvalidArgument;
      stop_listeners();
      return fail(bad_input ? kExitUsage : kExitFailure, endpoint.error().message);
    }
    service.set_bound_endpoint(listener->protocol(), *endpoint);
    bound.push_back(fmt::format("{} {}", listener->protocol(), endpoint->text()));
  }
  service.node().advertise(bound);
  log_start(config, resolved, service, bound);

  asio::steady_timer reserver(io);
  keep_maintaining(reserver, service);
  asio::steady_timer replanner(io);
  keep_replanning(replanner, subsystems.descriptors, listeners);

  // Draining: stop once no connection is open, or after one second.
  asio::steady_timer drain_timer(io);
  std::chrono::steady_clock::time_point drain_deadline;
  std::function<void()> drain = [&] {
    std::int64_t open = 0;
    for (const auto& listener : listeners) open += listener->open_connections();
    if (open == 0 || std::chrono::steady_clock::now() >= drain_deadline) {
      io.stop();
      return;
    }
    drain_timer.expires_after(std::chrono::milliseconds{20});
    drain_timer.async_wait([&](const boost::system::error_code&) { drain(); });
  };

  asio::signal_set hangups(io, SIGHUP);
  keep_reloading_tokens(hangups, service);
  asio::signal_set signals(io, SIGINT, SIGTERM);
  signals.async_wait([&](const boost::system::error_code& error, int signal) {
    if (error) return;
    spdlog::info("received signal {}: draining connections", signal);
    hangups.cancel();
    for (auto& listener : listeners) listener->stop_accepting();
    reserver.cancel();
    replanner.cancel();
    drain_deadline = std::chrono::steady_clock::now() + std::chrono::seconds{1};
    drain();
  });

  io.run();
  stop_listeners();
  return std::nullopt;
}

// Step 4. After the listeners stopped: closes the segment store, gives the
// node id back (cluster mode) or writes the exact high-water mark (static).
int shut_down(Subsystems& subsystems) {
  IdService& service = *subsystems.service;
  service.close_segments();
  Status saved = service.node().stop();
  if (!saved.ok()) {
    spdlog::error("{}", saved.error().message);
    return kExitFailure;
  }
  if (service.node().leased()) {
    spdlog::info("stopped: {} IDs issued; node id released, last issued {}",
                 service.metrics().ids_issued(),
                 format_time(service.generator().stats().last_issued));
  } else {
    spdlog::info("stopped: {} IDs issued; high-water mark {}", service.metrics().ids_issued(),
                 format_time(service.generator().stats().high_water));
  }
  return 0;
}

int run(int argc, char** argv) {
  ServerConfig config;
  std::optional<ResolvedConfig> resolved;
  Subsystems subsystems;
  if (Exit exit = load_configuration(argc, argv, config, resolved, subsystems.opaque_ids,
                                     subsystems.tokens)) {
    return *exit;
  }
  if (Exit exit = open_subsystems(config, *resolved, subsystems)) return *exit;
  if (Exit exit = serve_until_signal(config, *resolved, subsystems)) return *exit;
  return shut_down(subsystems);
}

}  // namespace
}  // namespace snowid::server

int main(int argc, char** argv) {
  snowid::disable_grpc_lock_order_checks();
  return snowid::server::run(argc, argv);
}
