#include "config.h"

#include <fmt/format.h>
#include <toml++/toml.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <sstream>

#include "coordinator_factory.h"
#include "listener.h"
#include "option_help.h"
#include "snowid/decode.h"
#include "snowid/ext/segment_store.h"
#include "time_text.h"

namespace snowid::server {
namespace {

using std::chrono::milliseconds;
using Row = OptionRow<ServerConfig>;
using Rows = OptionRows<ServerConfig>;
using option::shown;

// The server's own rows, in table order: max_batch; later bearer_token,
// token_file, opaque_key_file, log_level and log_format; later segment_store.
Rows batch_rows() {
  return {{"max_batch",
           option::number(&ServerConfig::max_batch, std::uint32_t{1'000'000}),
           shown(&ServerConfig::max_batch),
           {}}};
}

Rows access_rows() {
  return {
      {"bearer_token",
       option::text(&ServerConfig::bearer_token),
       option::secret(&ServerConfig::bearer_token),
       {}},
      {"token_file", option::text(&ServerConfig::token_file), shown(&ServerConfig::token_file), {}},
      {"opaque_key_file",
       option::text(&ServerConfig::opaque_key_file),
       shown(&ServerConfig::opaque_key_file),
       {}},
      {"log_level",
       [](ServerConfig& c, const std::string& v) -> Status {
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
       shown(&ServerConfig::log_level),
       {}},
      {"log_format",
       [](ServerConfig& c, const std::string& v) -> Status {
         if (v != "text" && v != "json") {
           return invalid_argument(
               fmt::format("unknown log format '{}'; expected text or json", v.substr(0, 40)));
         }
         c.log_format = v;
         return {};
       },
       shown(&ServerConfig::log_format),
       {}},
  };
}

// segment_store shows the store in effect, whose default lies in state_dir.
Rows segment_store_rows() {
  return {{"segment_store",
           [](ServerConfig& c, const std::string& v) -> Status {
             c.segment.store = v;
             return {};
           },
           [](const ServerConfig& c) -> std::string {
             const std::string url = segment_store_url(c);
             return url.empty() ? kSegmentStoreOff : redact_store_url(url);
           },
           {}}};
}

// The one table of options: each subsystem's rows, lifted into
// ServerConfig, in the order describe(), --check-config and --help show.
const Rows& options() {
  using C = ServerConfig;
  static const Rows kOptions = concat<C>({
      lift(&C::http, http_endpoint_rows()),
      lift(&C::grpc, grpc_endpoint_rows()),
      lift(&C::generator, node_id_rows()),
      lift(&C::coordinator, coordinator_option_rows()),
      // continue_above_mark needs the state file that only a fixed node id keeps.
      restrict_row<C>(lift(&C::generator, generator_rows()), "continue_above_mark",
                      [](const C& c) { return outside_fixed_node_id(c.coordinator); }),
      batch_rows(),
      lift(&C::http, http_thread_rows()),
      lift(&C::grpc, grpc_connection_rows()),
      lift(&C::http, http_request_rows()),
      lift(&C::thrift, thrift_rows()),
      lift(&C::resp, resp_rows()),
      access_rows(),
      lift(&C::audit, audit_rows()),
      segment_store_rows(),
      lift(&C::segment, segment_rows()),
  });
  return kOptions;
}

}  // namespace

std::vector<std::pair<std::string, std::string>> describe(const ServerConfig& config) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const Row& o : options()) out.emplace_back(o.name, o.get(config));
  return out;
}

const OptionHelp* option_help(std::string_view name) {
  for (const OptionHelp& help : kOptionHelp) {
    if (help.name == name) return &help;
  }
  return nullptr;
}

Status load_token_file(ServerConfig& config) {
  if (config.token_file.empty()) return {};
  if (!config.bearer_token.empty()) {
    return invalid_argument("bearer_token and token_file are both set: give the token once");
  }
  const std::string& path = config.token_file;
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
  if (token.empty())
    return invalid_argument(fmt::format("token_file {}: the token is empty", path));
  config.bearer_token = std::move(token);
  return {};
}

Result<std::unique_ptr<OpaqueIds>> load_opaque_ids(const ServerConfig& config) {
  if (config.opaque_key_file.empty()) return std::unique_ptr<OpaqueIds>();
  auto loaded = OpaqueIds::from_key_file(config.opaque_key_file);
  if (!loaded.ok()) return invalid_argument("opaque_key_file " + loaded.error().message);
  return loaded;
}

std::string effective_config_toml(const ServerConfig& config) {
  std::string out = "# effective snowidd configuration\n";
  for (const auto& [name, value] : describe(config)) {
    // What cannot be loaded back as it is shown is a comment: a layout
    // field the preset decides, a secret, a store URL with its password hidden.
    if (value == "(preset)") {
      out +=
          fmt::format("# {} comes from the preset \"{}\"\n", name, config.generator.layout.preset);
      continue;
    }
    if (value == "(set)") {
      out += fmt::format("# {} is set (not shown)\n", name);
      continue;
    }
    // A TOML basic string: quotes, backslashes and control characters escaped.
    std::string quoted = "\"";
    for (const char c : value) {
      if (c == '"' || c == '\\') {
        quoted += '\\';
        quoted += c;
      } else if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
        quoted += fmt::format("\\u{:04x}", static_cast<unsigned char>(c));
      } else {
        quoted += c;
      }
    }
    quoted += '"';
    if (name == "segment_store" && value != segment_store_url(config) &&
        value != kSegmentStoreOff) {
      out += fmt::format("# {} = {} (its password not shown)\n", name, quoted);
      continue;
    }
    out += fmt::format("{} = {}\n", name, quoted);
  }
  return out;
}

Status apply_option(ServerConfig& config, const std::string& name, const std::string& value,
                    const std::string& source) {
  for (const Row& o : options()) {
    if (name != o.name) continue;
    Status s = o.set(config, value);
    if (!s.ok()) {
      return invalid_argument(fmt::format("{}: {}: {}", source, name, s.error().message));
    }
    return {};
  }
  return invalid_argument(fmt::format("{}: unknown option '{}'", source, name));
}

namespace {

// Removes `prefix` from the front of `text`; false (and `text` unchanged) if
// it is not there.
bool consume(std::string_view& text, std::string_view prefix) {
  if (text.substr(0, prefix.size()) != prefix) return false;
  text.remove_prefix(prefix.size());
  return true;
}

// Removes the leading run of characters `keep` accepts; false if there was none.
template <typename Predicate>
bool consume_while(std::string_view& text, Predicate keep) {
  std::size_t n = 0;
  while (n < text.size() && keep(static_cast<unsigned char>(text[n]))) ++n;
  text.remove_prefix(n);
  return n > 0;
}

}  // namespace

bool is_kubernetes_service_link(std::string_view name) {
  if (!consume(name, "SNOWID_")) return false;
  // SNOWID_SERVICE_HOST, SNOWID_SERVICE_PORT, SNOWID_SERVICE_PORT_<NAME>
  // (a named port, upper case, '-' as '_').
  if (consume(name, "SERVICE_")) {
    if (name == "HOST" || name == "PORT") return true;
    return consume(name, "PORT_") &&
           consume_while(
               name,
               [](unsigned char c) { return std::isupper(c) || std::isdigit(c) || c == '_'; }) &&
           name.empty();
  }
  // SNOWID_PORT, SNOWID_PORT_<n>_<proto>[_PROTO|_PORT|_ADDR].
  if (!consume(name, "PORT")) return false;
  if (name.empty()) return true;
  if (!consume(name, "_") || !consume_while(name, [](unsigned char c) { return std::isdigit(c); }))
    return false;
  if (!consume(name, "_TCP") && !consume(name, "_UDP") && !consume(name, "_SCTP")) return false;
  return name.empty() || name == "_PROTO" || name == "_PORT" || name == "_ADDR";
}

Status apply_environment(ServerConfig& config, char** environ_entries,
                         std::vector<std::string>* ignored) {
  for (char** e = environ_entries; e != nullptr && *e != nullptr; ++e) {
    const std::string entry(*e);
    if (entry.rfind("SNOWID_", 0) != 0) continue;
    const auto eq = entry.find('=');
    if (eq == std::string::npos) continue;
    if (is_kubernetes_service_link(std::string_view(entry).substr(0, eq))) {
      if (ignored != nullptr) ignored->push_back(entry.substr(0, eq));
      continue;
    }
    std::string name = entry.substr(7, eq - 7);
    for (char& ch : name) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    Status s = apply_option(config, name, entry.substr(eq + 1),
                            fmt::format("environment variable {}", entry.substr(0, eq)));
    if (!s.ok()) return s;
  }
  return {};
}

namespace {

// Ok if `path` names a readable regular file (a symbolic link to one is
// fine); otherwise what is there instead, in words an operator acts on. A
// Kubernetes ConfigMap mounted at the file's path is a directory, and
// toml++ would read it as an empty file: every option at its default.
Status check_config_file(const std::string& path) {
  std::error_code ec;
  const auto link = std::filesystem::symlink_status(path, ec);
  if (link.type() == std::filesystem::file_type::not_found) {
    return invalid_argument(fmt::format("config file {}: no such file", path));
  }
  const auto target = std::filesystem::status(path, ec);
  if (link.type() == std::filesystem::file_type::symlink &&
      target.type() == std::filesystem::file_type::not_found) {
    return invalid_argument(
        fmt::format("config file {}: a symbolic link to {}, which does not exist", path,
                    std::filesystem::read_symlink(path, ec).string()));
  }
  if (target.type() == std::filesystem::file_type::directory) {
    return invalid_argument(fmt::format(
        "config file {}: a directory, not a file (a volume mounted at the file's path? name the "
        "file inside it)",
        path));
  }
  if (target.type() != std::filesystem::file_type::regular) {
    return invalid_argument(fmt::format("config file {}: not a regular file", path));
  }
  if (::access(path.c_str(), R_OK) != 0) {
    return invalid_argument(
        fmt::format("config file {}: cannot read: {}", path, std::strerror(errno)));
  }
  return {};
}

}  // namespace

Status apply_toml_file(ServerConfig& config, const std::string& path, std::size_t* applied) {
  if (applied != nullptr) *applied = 0;
  if (Status file = check_config_file(path); !file.ok()) return file;
  toml::table table;
  try {
    table = toml::parse_file(path);
  } catch (const toml::parse_error& e) {
    const auto& where = e.source().begin;
    return invalid_argument(fmt::format("{}:{}:{}: {}", path, where.line, where.column,
                                        e.description()));
  }
  for (const auto& [key, node] : table) {
    std::string value;
    if (const auto* s = node.as_string()) {
      value = s->get();
    } else if (const auto* i = node.as_integer()) {
      if (i->get() < 0) {
        return invalid_argument(fmt::format("{}: {}: must not be negative", path, key.str()));
      }
      value = std::to_string(i->get());
    } else if (const auto* b = node.as_boolean()) {
      value = b->get() ? "true" : "false";
    } else if (const auto* f = node.as_floating_point()) {
      value = fmt::format("{}", f->get());
    } else {
      return invalid_argument(
          fmt::format("{}: {}: expected a string, a number or a boolean", path, key.str()));
    }
    Status s = apply_option(config, std::string(key.str()), value, path);
    if (!s.ok()) return s;
    if (applied != nullptr) ++*applied;
  }
  return {};
}

Result<ResolvedConfig> resolve_config(const ServerConfig& config) {
  const ServerConfig defaults;
  for (const Row& o : options()) {
    const std::string where = outside_scope(o, config);
    if (!where.empty() && o.get(config) != o.get(defaults)) {
      return invalid_argument(fmt::format(
          "option {} is set but has no effect here: it applies only with {}; remove it, or "
          "set what it belongs to",
          o.name, where));
    }
  }
  const GeneratorConfig& g = config.generator;
  auto layout = resolve(g.layout);
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
  const HttpOptions& http = config.http;
  if (http.tls_cert.empty() != http.tls_key.empty()) {
    return invalid_argument("tls_cert and tls_key must be given together (or neither)");
  }
  for (const std::string* file : {&http.tls_cert, &http.tls_key}) {
    std::error_code ec;
    if (!file->empty() && !std::filesystem::is_regular_file(*file, ec)) {
      return invalid_argument(fmt::format("{} {} is not a readable file",
                                          file == &http.tls_cert ? "tls_cert" : "tls_key", *file));
    }
  }
  if (config.max_batch == 0) return invalid_argument("max_batch must be at least 1");
  if (http.io_threads < 1) return invalid_argument("io_threads must be at least 1");
  if (http.max_connections < 1) return invalid_argument("max_connections must be at least 1");
  if (Status listeners = check_listener_options(config); !listeners.ok()) return listeners.error();
  if (g.state_dir.empty()) return invalid_argument("state_dir must not be empty");
  if (!config.coordinator.peers.empty() && !http.tls_cert.empty()) {
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
  resolved.coordinator.advertised_addresses = {"http " + http.endpoint.text()};
  if (config.grpc.endpoint) {
    resolved.coordinator.advertised_addresses.push_back("grpc " + config.grpc.endpoint->text());
  }
  if (Status store = check_coordinator(resolved.coordinator); !store.ok()) return store.error();

  GeneratorOptions& o = resolved.generator;
  o.layout = *layout;
  o.datacenter_id = *node_id >> layout->worker_bits;
  o.worker_id = *node_id & ((std::uint64_t{1} << layout->worker_bits) - 1);
  o.clock_policy = g.clock_policy;
  o.max_wait = g.max_wait;
  o.max_drift = g.max_drift;
  o.max_start_wait = g.max_start_wait;
  o.sequence_start = g.sequence_start;
  o.state_file = std::filesystem::path(g.state_dir) / "generator.state";
  o.lock_state_directory = true;  // state_dir is this node's alone
  o.defer_start_wait = true;      // listen (and answer probes) while the clock catches up
  o.continue_above_mark = g.continue_above_mark;

  resolved.segment_url = segment_store_url(config);
  resolved.audit_log = config.audit.log;
  return resolved;
}

Status validate(const ServerConfig& config) {
  auto resolved = resolve_config(config);
  if (!resolved.ok()) return resolved.error();
  return {};
}

SegmentAllocatorOptions segment_allocator_options(const ServerConfig& config) {
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

std::string segment_store_url(const ServerConfig& config) {
  if (config.segment.store == kSegmentStoreOff) return "";
  if (!config.segment.store.empty()) return config.segment.store;
  // An absolute state_dir gives sqlite:///abs/segments.db (three slashes), a
  // relative one sqlite://rel/segments.db: both what open_segment_store reads.
  return "sqlite://" + (std::filesystem::path(config.generator.state_dir) / "segments.db").string();
}

namespace {

// `text` with its %XX escapes decoded, as libpq reads a URL's parameter names.
std::string percent_decoded(std::string_view text) {
  std::string out;
  for (std::size_t i = 0; i < text.size(); ++i) {
    unsigned char byte = 0;
    if (text[i] == '%' && text.size() - i >= 3) {
      const char* digits = text.data() + i + 1;
      if (std::from_chars(digits, digits + 2, byte, 16).ptr == digits + 2) {
        out += static_cast<char>(byte);
        i += 2;
        continue;
      }
    }
    out += text[i];
  }
  return out;
}

}  // namespace

namespace {

std::string redact_one_store_url(std::string_view url) {
  std::string out(url);
  // user:PASSWORD@host in the authority part. libpq ends the authority at
  // the first '/' only, so a '?' or '#' before the '@' is part of the
  // password ("user:pa?ss@host"), not the start of a query or fragment.
  std::size_t host = 0;  // where the host starts, after any user info
  const auto scheme_end = out.find("://");
  if (scheme_end != std::string::npos) {
    const auto authority = scheme_end + 3;
    host = authority;
    const auto authority_end = out.find('/', authority);
    const auto at = out.rfind('@', authority_end == std::string::npos ? out.size() : authority_end);
    if (at != std::string::npos && at > authority) {
      const auto colon = out.find(':', authority);
      if (colon != std::string::npos && colon < at) out.replace(colon + 1, at - colon - 1, "***");
      // libpq's user info ends at its first '@'.
      host = out.find('@', authority) + 1;
    }
  }
  // password=... among the query parameters (libpq accepts it there too,
  // its name percent-encoded or not). They start at the first '?' after the
  // user info, which may hold a '?'.
  const auto query = out.find('?', host);
  for (auto pos = query; pos != std::string::npos && pos < out.size();) {
    const auto start = pos + 1;
    const auto end = std::min(out.find('&', start), out.size());
    const auto equals = out.find('=', start);
    if (equals < end &&
        percent_decoded(std::string_view(out).substr(start, equals - start)) == "password") {
      out.replace(equals + 1, end - equals - 1, "***");
    }
    pos = out.find('&', start);
  }
  return out;
}

}  // namespace

std::string redact_store_url(std::string_view url) {
  // Read first as one URL, since a password may hold a space ("u:s pw@h"),
  // then, as a ticket-server set, each URL between spaces on its own.
  const std::string whole = redact_one_store_url(url);
  std::string out;
  for (std::size_t at = 0; at <= whole.size();) {
    const std::size_t space = std::min(whole.find(' ', at), whole.size());
    out += redact_one_store_url(std::string_view(whole).substr(at, space - at));
    if (space < whole.size()) out += ' ';
    at = space + 1;
  }
  return out;
}

}  // namespace snowid::server
