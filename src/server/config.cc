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

#include "snowid/decode.h"
#include "snowid/segment_store.h"

namespace snowid::server {
namespace {

using std::chrono::milliseconds;

// The longest max_wait_ms: a request waiting for the clock longer than this
// is one an HTTP client or a load balancer would have given up on.
constexpr std::uint64_t kMaxWaitBound = 10'000;

// Where an option has a meaning. Outside its scope an option set to anything
// but its default is an error (validate()): no option is silently ignored.
enum class Scope {
  kAlways,
  kEtcd,             // coordinator = "etcd"
  kStatic,           // coordinator = "static"
  kWaitPolicy,       // clock_policy = "wait"
  kMonotonicPolicy,  // clock_policy = "monotonic"
  kSegments,         // segment_store is not "off"
  kPeerClocks,       // coordinator = "etcd", or peers listed
};

struct Option {
  const char* name;
  std::function<Status(ServerConfig&, const std::string&)> set;
  std::function<std::string(const ServerConfig&)> get;
  Scope scope = Scope::kAlways;
};

// Empty if `scope` holds for `c`, else where the option would apply.
std::string outside_scope(Scope scope, const ServerConfig& c) {
  switch (scope) {
    case Scope::kAlways:
      return "";
    case Scope::kEtcd:
      return c.coordinator == "etcd" ? "" : "coordinator = \"etcd\"";
    case Scope::kStatic:
      return c.coordinator == "static" ? "" : "coordinator = \"static\"";
    case Scope::kWaitPolicy:
      return c.clock_policy == ClockPolicy::kWait ? "" : "clock_policy = \"wait\"";
    case Scope::kMonotonicPolicy:
      return c.clock_policy == ClockPolicy::kMonotonic ? "" : "clock_policy = \"monotonic\"";
    case Scope::kPeerClocks:
      return c.coordinator == "etcd" || !c.peers.empty() ? ""
                                                         : "coordinator = \"etcd\" or peers listed";
    case Scope::kSegments:
      return c.segment_store != kSegmentStoreOff ? "" : "segment mode (segment_store not \"off\")";
  }
  return "";
}

Result<Endpoint> parse_endpoint(const std::string& text) {
  const auto colon = text.rfind(':');
  if (colon == std::string::npos || colon == 0) {
    return invalid_argument(fmt::format("'{}' is not ADDR:PORT", text));
  }
  auto port = parse_unsigned(text.substr(colon + 1), 65535, "port");
  if (!port.ok()) return port.error();
  std::string host = text.substr(0, colon);
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  return Endpoint{host, static_cast<std::uint16_t>(*port)};
}

template <typename T>
std::function<Status(ServerConfig&, const std::string&)> number(T ServerConfig::*field, T max) {
  return [field, max](ServerConfig& c, const std::string& v) -> Status {
    auto n = parse_unsigned(v, static_cast<std::uint64_t>(max), "value");
    if (!n.ok()) return n.error();
    c.*field = static_cast<T>(*n);
    return {};
  };
}

std::function<Status(ServerConfig&, const std::string&)> duration(
    milliseconds ServerConfig::*field, std::uint64_t max_ms = 86'400'000) {
  return [field, max_ms](ServerConfig& c, const std::string& v) -> Status {
    auto n = parse_unsigned(v, max_ms, "milliseconds");
    if (!n.ok()) return n.error();
    c.*field = milliseconds{static_cast<long long>(*n)};
    return {};
  };
}

std::function<Status(ServerConfig&, const std::string&)> text(std::string ServerConfig::*field) {
  return [field](ServerConfig& c, const std::string& v) -> Status {
    c.*field = v;
    return {};
  };
}

std::function<Status(ServerConfig&, const std::string&)> boolean(bool ServerConfig::*field) {
  return [field](ServerConfig& c, const std::string& v) -> Status {
    if (v == "true" || v == "1") {
      c.*field = true;
    } else if (v == "false" || v == "0") {
      c.*field = false;
    } else {
      return invalid_argument(fmt::format("'{}' is not true or false", v.substr(0, 40)));
    }
    return {};
  };
}

std::function<Status(ServerConfig&, const std::string&)> bits(std::optional<int> LayoutSpec::*field) {
  return [field](ServerConfig& c, const std::string& v) -> Status {
    auto n = parse_unsigned(v, 64, "bits");
    if (!n.ok()) return n.error();
    c.layout.*field = static_cast<int>(*n);
    return {};
  };
}

// An integer in [min, max].
std::function<Status(ServerConfig&, const std::string&)> bounded(std::int64_t ServerConfig::*field,
                                                                 std::int64_t min,
                                                                 std::int64_t max) {
  return [field, min, max](ServerConfig& c, const std::string& v) -> Status {
    auto n = parse_unsigned(v, static_cast<std::uint64_t>(max), "value");
    if (!n.ok()) return n.error();
    if (static_cast<std::int64_t>(*n) < min) {
      return invalid_argument(fmt::format("{} is below the minimum {}", *n, min));
    }
    c.*field = static_cast<std::int64_t>(*n);
    return {};
  };
}

// A duration in milliseconds, at least 1.
std::function<Status(ServerConfig&, const std::string&)> positive_duration(
    milliseconds ServerConfig::*field) {
  return [field](ServerConfig& c, const std::string& v) -> Status {
    auto n = parse_unsigned(v, 86'400'000, "milliseconds");
    if (!n.ok()) return n.error();
    if (*n == 0) return invalid_argument("must be at least 1 ms");
    c.*field = milliseconds{static_cast<long long>(*n)};
    return {};
  };
}

// A fraction in [0, 1], written as a decimal number ("0.1", "1", "0").
std::function<Status(ServerConfig&, const std::string&)> fraction(double ServerConfig::*field) {
  return [field](ServerConfig& c, const std::string& v) -> Status {
    double value = -1;
    const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), value);
    if (v.empty() || ec != std::errc{} || end != v.data() + v.size() || !(value >= 0.0) ||
        !(value <= 1.0)) {
      return invalid_argument(
          fmt::format("'{}' is not a fraction between 0 and 1 (e.g. 0.1)", v.substr(0, 40)));
    }
    c.*field = value;
    return {};
  };
}

std::string optional_text(const std::optional<int>& value) {
  return value ? std::to_string(*value) : "(preset)";
}

const std::vector<Option>& options() {
  static const std::vector<Option> kOptions = {
      {"http",
       [](ServerConfig& c, const std::string& v) -> Status {
         auto e = parse_endpoint(v);
         if (!e.ok()) return e.error();
         c.http = *e;
         return {};
       },
       [](const ServerConfig& c) { return c.http.text(); }},
      {"grpc",
       [](ServerConfig& c, const std::string& v) -> Status {
         auto e = parse_endpoint(v);
         if (!e.ok()) return e.error();
         c.grpc = *e;
         return {};
       },
       [](const ServerConfig& c) { return c.grpc.text(); }},
      {"datacenter_id", number(&ServerConfig::datacenter_id, std::uint64_t{0xffffffff}),
       [](const ServerConfig& c) { return std::to_string(c.datacenter_id); }},
      {"worker_id", number(&ServerConfig::worker_id, std::uint64_t{0xffffffff}),
       [](const ServerConfig& c) { return std::to_string(c.worker_id); }},
      {"coordinator",
       [](ServerConfig& c, const std::string& v) -> Status {
         if (v != "static" && v != "etcd") {
           return invalid_argument(fmt::format("unknown coordinator '{}'; expected static or etcd", v));
         }
         c.coordinator = v;
         return {};
       },
       [](const ServerConfig& c) { return c.coordinator; }},
      {"etcd_endpoints",
       [](ServerConfig& c, const std::string& v) -> Status {
         auto parsed = parse_etcd_endpoints(v);
         if (!parsed.ok()) return parsed.error();
         c.etcd_endpoints = v;
         return {};
       },
       [](const ServerConfig& c) { return c.etcd_endpoints; }, Scope::kEtcd},
      {"peers",
       [](ServerConfig& c, const std::string& v) -> Status {
         std::size_t start = 0;
         while (start < v.size()) {
           const auto comma = v.find(',', start);
           const std::string peer =
               v.substr(start, comma == std::string::npos ? v.npos : comma - start);
           if (auto e = parse_endpoint(peer); !e.ok()) return e.error();
           if (comma == std::string::npos) break;
           start = comma + 1;
         }
         c.peers = v;
         return {};
       },
       [](const ServerConfig& c) { return c.peers; }, Scope::kStatic},
      {"cluster", text(&ServerConfig::cluster), [](const ServerConfig& c) { return c.cluster; },
       Scope::kEtcd},
      {"node_id_from_hostname", boolean(&ServerConfig::node_id_from_hostname),
       [](const ServerConfig& c) {
         return std::string(c.node_id_from_hostname ? "true" : "false");
       }},
      {"node_id_policy",
       [](ServerConfig& c, const std::string& v) -> Status {
         if (v != "prefer" && v != "require") {
           return invalid_argument(
               fmt::format("unknown node_id_policy '{}'; expected prefer or require", v));
         }
         c.node_id_policy = v;
         return {};
       },
       [](const ServerConfig& c) { return c.node_id_policy; }, Scope::kEtcd},
      {"lease_ttl_s",
       [](ServerConfig& c, const std::string& v) -> Status {
         auto n = parse_unsigned(v, 3600, "seconds");
         if (!n.ok()) return n.error();
         c.lease_ttl = std::chrono::seconds{static_cast<long long>(*n)};
         return {};
       },
       [](const ServerConfig& c) { return std::to_string(c.lease_ttl.count()); }, Scope::kEtcd},
      {"lease_safety_margin_ms", duration(&ServerConfig::lease_safety_margin),
       [](const ServerConfig& c) { return std::to_string(c.lease_safety_margin.count()); },
       Scope::kEtcd},
      {"max_peer_clock_offset_ms", duration(&ServerConfig::max_peer_clock_offset),
       [](const ServerConfig& c) { return std::to_string(c.max_peer_clock_offset.count()); },
       Scope::kPeerClocks},
      {"claim_timeout_ms", duration(&ServerConfig::claim_timeout),
       [](const ServerConfig& c) { return std::to_string(c.claim_timeout.count()); }, Scope::kEtcd},
      {"etcd_user", text(&ServerConfig::etcd_user),
       [](const ServerConfig& c) { return c.etcd_user; }, Scope::kEtcd},
      {"etcd_password", text(&ServerConfig::etcd_password),
       [](const ServerConfig& c) { return c.etcd_password.empty() ? "" : "(set)"; }, Scope::kEtcd},
      {"etcd_tls_ca", text(&ServerConfig::etcd_tls_ca),
       [](const ServerConfig& c) { return c.etcd_tls_ca; }, Scope::kEtcd},
      {"etcd_tls_cert", text(&ServerConfig::etcd_tls_cert),
       [](const ServerConfig& c) { return c.etcd_tls_cert; }, Scope::kEtcd},
      {"etcd_tls_key", text(&ServerConfig::etcd_tls_key),
       [](const ServerConfig& c) { return c.etcd_tls_key; }, Scope::kEtcd},
      {"preset",
       [](ServerConfig& c, const std::string& v) -> Status {
         auto p = preset(v);
         if (!p.ok()) return p.error();
         c.layout.preset = v;
         return {};
       },
       [](const ServerConfig& c) { return c.layout.preset; }},
      {"timestamp_bits", bits(&LayoutSpec::timestamp_bits),
       [](const ServerConfig& c) { return optional_text(c.layout.timestamp_bits); }},
      {"datacenter_bits", bits(&LayoutSpec::datacenter_bits),
       [](const ServerConfig& c) { return optional_text(c.layout.datacenter_bits); }},
      {"worker_bits", bits(&LayoutSpec::worker_bits),
       [](const ServerConfig& c) { return optional_text(c.layout.worker_bits); }},
      {"sequence_bits", bits(&LayoutSpec::sequence_bits),
       [](const ServerConfig& c) { return optional_text(c.layout.sequence_bits); }},
      {"time_unit_ms",
       [](ServerConfig& c, const std::string& v) -> Status {
         auto n = parse_unsigned(v, 86'400'000, "time unit");
         if (!n.ok()) return n.error();
         c.layout.time_unit = milliseconds{static_cast<long long>(*n)};
         return {};
       },
       [](const ServerConfig& c) {
         return c.layout.time_unit ? std::to_string(c.layout.time_unit->count()) : "(preset)";
       }},
      {"epoch",
       [](ServerConfig& c, const std::string& v) -> Status {
         auto t = parse_time(v);
         if (!t.ok()) return t.error();
         c.layout.epoch = *t;
         return {};
       },
       [](const ServerConfig& c) {
         return c.layout.epoch ? format_time(*c.layout.epoch) : "(preset)";
       }},
      {"sequence_position",
       [](ServerConfig& c, const std::string& v) -> Status {
         auto p = parse_sequence_position(v);
         if (!p.ok()) return p.error();
         c.layout.sequence_position = *p;
         return {};
       },
       [](const ServerConfig& c) -> std::string {
         return c.layout.sequence_position ? sequence_position_name(*c.layout.sequence_position)
                                           : "(preset)";
       }},
      {"clock_policy",
       [](ServerConfig& c, const std::string& v) -> Status {
         auto p = parse_clock_policy(v);
         if (!p.ok()) return p.error();
         c.clock_policy = *p;
         return {};
       },
       [](const ServerConfig& c) { return std::string(clock_policy_name(c.clock_policy)); }},
      {"max_wait_ms", duration(&ServerConfig::max_wait, kMaxWaitBound),
       [](const ServerConfig& c) { return std::to_string(c.max_wait.count()); },
       Scope::kWaitPolicy},
      {"max_drift_ms", duration(&ServerConfig::max_drift),
       [](const ServerConfig& c) { return std::to_string(c.max_drift.count()); },
       Scope::kMonotonicPolicy},
      {"max_start_wait_ms", duration(&ServerConfig::max_start_wait),
       [](const ServerConfig& c) { return std::to_string(c.max_start_wait.count()); },
       Scope::kWaitPolicy},
      {"continue_above_mark", boolean(&ServerConfig::continue_above_mark),
       [](const ServerConfig& c) { return c.continue_above_mark ? "true" : "false"; },
       Scope::kStatic},
      {"sequence_start",
       [](ServerConfig& c, const std::string& v) -> Status {
         auto s = parse_sequence_start(v);
         if (!s.ok()) return s.error();
         c.sequence_start = *s;
         return {};
       },
       [](const ServerConfig& c) { return std::string(sequence_start_name(c.sequence_start)); }},
      {"state_dir", text(&ServerConfig::state_dir),
       [](const ServerConfig& c) { return c.state_dir; }},
      {"max_batch", number(&ServerConfig::max_batch, std::uint32_t{1'000'000}),
       [](const ServerConfig& c) { return std::to_string(c.max_batch); }},
      {"io_threads", number(&ServerConfig::io_threads, 256),
       [](const ServerConfig& c) { return std::to_string(c.io_threads); }},
      {"max_connections", number(&ServerConfig::max_connections, 1'000'000),
       [](const ServerConfig& c) { return std::to_string(c.max_connections); }},
      {"grpc_max_connections", number(&ServerConfig::grpc_max_connections, 1'000'000),
       [](const ServerConfig& c) { return std::to_string(c.grpc_max_connections); }},
      {"max_header_bytes", number(&ServerConfig::max_header_bytes, std::uint32_t{1 << 20}),
       [](const ServerConfig& c) { return std::to_string(c.max_header_bytes); }},
      {"max_body_bytes", number(&ServerConfig::max_body_bytes, std::uint32_t{1 << 20}),
       [](const ServerConfig& c) { return std::to_string(c.max_body_bytes); }},
      {"read_timeout_ms", duration(&ServerConfig::read_timeout),
       [](const ServerConfig& c) { return std::to_string(c.read_timeout.count()); }},
      {"idle_timeout_ms", duration(&ServerConfig::idle_timeout),
       [](const ServerConfig& c) { return std::to_string(c.idle_timeout.count()); }},
      {"tls_cert", text(&ServerConfig::tls_cert), [](const ServerConfig& c) { return c.tls_cert; }},
      {"tls_key", text(&ServerConfig::tls_key), [](const ServerConfig& c) { return c.tls_key; }},
      {"bearer_token", text(&ServerConfig::bearer_token),
       [](const ServerConfig& c) { return c.bearer_token.empty() ? "" : "(set)"; }},
      {"token_file", text(&ServerConfig::token_file),
       [](const ServerConfig& c) { return c.token_file; }},
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
       [](const ServerConfig& c) { return c.log_level; }},
      {"audit_log", text(&ServerConfig::audit_log),
       [](const ServerConfig& c) { return c.audit_log; }},
      {"audit_fsync", boolean(&ServerConfig::audit_fsync),
       [](const ServerConfig& c) { return c.audit_fsync ? "true" : "false"; }},
      {"segment_store", text(&ServerConfig::segment_store),
       [](const ServerConfig& c) -> std::string {
         const std::string url = segment_store_url(c);
         return url.empty() ? kSegmentStoreOff : redact_store_url(url);
       }},
      {"segment_auto_create", boolean(&ServerConfig::segment_auto_create),
       [](const ServerConfig& c) { return c.segment_auto_create ? "true" : "false"; },
       Scope::kSegments},
      {"segment_auto_create_step",
       bounded(&ServerConfig::segment_auto_create_step, kMinSegmentStep, kMaxSegmentStep),
       [](const ServerConfig& c) { return std::to_string(c.segment_auto_create_step); },
       Scope::kSegments},
      {"segment_prefetch_at", fraction(&ServerConfig::segment_prefetch_at),
       [](const ServerConfig& c) { return fmt::format("{}", c.segment_prefetch_at); },
       Scope::kSegments},
      {"segment_max_step",
       bounded(&ServerConfig::segment_max_step, kMinSegmentStep, kMaxSegmentStep),
       [](const ServerConfig& c) { return std::to_string(c.segment_max_step); }, Scope::kSegments},
      {"segment_request_timeout_ms", positive_duration(&ServerConfig::segment_request_timeout),
       [](const ServerConfig& c) { return std::to_string(c.segment_request_timeout.count()); },
       Scope::kSegments},
      {"segment_store_timeout_ms", positive_duration(&ServerConfig::segment_store_timeout),
       [](const ServerConfig& c) { return std::to_string(c.segment_store_timeout.count()); },
       Scope::kSegments},
      {"segment_retry_max_ms", positive_duration(&ServerConfig::segment_retry_max),
       [](const ServerConfig& c) { return std::to_string(c.segment_retry_max.count()); },
       Scope::kSegments},
  };
  return kOptions;
}

// The node id a Kubernetes StatefulSet pod's hostname names ("snowid-3" -> 3).
Result<std::uint64_t> hostname_node_id(const Layout& layout) {
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

}  // namespace

std::string Endpoint::text() const {
  return host.find(':') != std::string::npos ? fmt::format("[{}]:{}", host, port)
                                             : fmt::format("{}:{}", host, port);
}

std::vector<std::pair<std::string, std::string>> describe(const ServerConfig& config) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const Option& o : options()) out.emplace_back(o.name, o.get(config));
  return out;
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

std::string effective_config_toml(const ServerConfig& config) {
  std::string out = "# effective snowidd configuration\n";
  for (const auto& [name, value] : describe(config)) {
    // What cannot be loaded back as it is shown is a comment: a layout
    // field the preset decides, a secret, a store URL with its password hidden.
    if (value == "(preset)") {
      out += fmt::format("# {} comes from the preset \"{}\"\n", name, config.layout.preset);
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
  for (const Option& o : options()) {
    if (name != o.name) continue;
    Status s = o.set(config, value);
    if (!s.ok()) {
      return invalid_argument(fmt::format("{}: {}: {}", source, name, s.error().message));
    }
    return {};
  }
  return invalid_argument(fmt::format("{}: unknown option '{}'", source, name));
}

Status apply_environment(ServerConfig& config, char** environ_entries) {
  for (char** e = environ_entries; e != nullptr && *e != nullptr; ++e) {
    const std::string entry(*e);
    if (entry.rfind("SNOWID_", 0) != 0) continue;
    const auto eq = entry.find('=');
    if (eq == std::string::npos) continue;
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

Status validate(const ServerConfig& config) {
  const ServerConfig defaults;
  for (const Option& o : options()) {
    const std::string where = outside_scope(o.scope, config);
    if (!where.empty() && o.get(config) != o.get(defaults)) {
      return invalid_argument(fmt::format(
          "option {} is set but has no effect here: it applies only with {}; remove it, or "
          "set what it belongs to",
          o.name, where));
    }
  }
  auto layout = resolve(config.layout);
  if (!layout.ok()) return layout.error();
  // Known before any request: refused at start rather than answered 500.
  if (Status usable = usable_at(*layout, SystemClock::instance().now_fresh()); !usable.ok()) {
    return usable;
  }
  auto generator = generator_options(config);
  if (!generator.ok()) return generator.error();
  const auto facts = layout_facts(*layout, milliseconds{0});
  if (config.datacenter_id > facts.max_datacenter_id) {
    return invalid_argument(fmt::format("datacenter_id {} is out of range 0..{}",
                                        config.datacenter_id, facts.max_datacenter_id));
  }
  if (config.worker_id > facts.max_worker_id) {
    return invalid_argument(fmt::format("worker_id {} is out of range 0..{}", config.worker_id,
                                        facts.max_worker_id));
  }
  if (config.tls_cert.empty() != config.tls_key.empty()) {
    return invalid_argument("tls_cert and tls_key must be given together (or neither)");
  }
  for (const std::string* file : {&config.tls_cert, &config.tls_key}) {
    std::error_code ec;
    if (!file->empty() && !std::filesystem::is_regular_file(*file, ec)) {
      return invalid_argument(fmt::format("{} {} is not a readable file",
                                          file == &config.tls_cert ? "tls_cert" : "tls_key",
                                          *file));
    }
  }
  if (config.max_batch == 0) return invalid_argument("max_batch must be at least 1");
  if (config.io_threads < 1) return invalid_argument("io_threads must be at least 1");
  if (config.max_connections < 1) return invalid_argument("max_connections must be at least 1");
  if (config.grpc_max_connections < 1) {
    return invalid_argument("grpc_max_connections must be at least 1");
  }
  if (config.state_dir.empty()) return invalid_argument("state_dir must not be empty");
  if (!config.peers.empty() && !config.tls_cert.empty()) {
    return invalid_argument("peers are asked over plain HTTP: not with tls_cert and tls_key");
  }
  if (config.audit_fsync && config.audit_log.empty()) {
    return invalid_argument("audit_fsync needs audit_log (the file to write the records to)");
  }
  if (config.coordinator == "etcd") {
    auto etcd = etcd_options(config);
    if (!etcd.ok()) return etcd.error();
    if (config.lease_ttl < std::chrono::seconds{2}) {
      return invalid_argument("lease_ttl_s must be at least 2");
    }
    if (config.lease_safety_margin >= config.lease_ttl) {
      return invalid_argument(fmt::format("lease_safety_margin_ms {} must be below lease_ttl_s {}",
                                          config.lease_safety_margin.count(),
                                          config.lease_ttl.count()));
    }
  }
  return {};
}

Result<EtcdOptions> etcd_options(const ServerConfig& config) {
  auto layout = resolve(config.layout);
  if (!layout.ok()) return layout.error();
  auto endpoints = parse_etcd_endpoints(config.etcd_endpoints);
  if (!endpoints.ok()) return endpoints.error();
  EtcdOptions o;
  o.endpoints = *endpoints;
  o.cluster = config.cluster;
  o.layout = *layout;
  if (config.node_id_from_hostname) {
    auto ordinal = hostname_node_id(*layout);
    if (!ordinal.ok()) return ordinal.error();
    o.preferred_node_id = *ordinal;
  } else {
    o.preferred_node_id = config.datacenter_id << layout->worker_bits | config.worker_id;
  }
  o.require_preferred_node_id = config.node_id_policy == "require";
  o.lease_ttl = config.lease_ttl;
  o.safety_margin = config.lease_safety_margin;
  o.max_peer_clock_offset = config.max_peer_clock_offset;
  o.user = config.etcd_user;
  o.password = config.etcd_password;
  o.tls_ca_file = config.etcd_tls_ca;
  o.tls_cert_file = config.etcd_tls_cert;
  o.tls_key_file = config.etcd_tls_key;
  o.advertised_addresses = {"http " + config.http.text(), "grpc " + config.grpc.text()};
  return o;
}

Result<GeneratorOptions> generator_options(const ServerConfig& config) {
  auto layout = resolve(config.layout);
  if (!layout.ok()) return layout.error();
  GeneratorOptions o;
  o.layout = *layout;
  o.datacenter_id = config.datacenter_id;
  o.worker_id = config.worker_id;
  if (config.node_id_from_hostname && config.coordinator == "static") {
    // The StatefulSet ordinal is the node id, as in cluster mode, without a store.
    if (config.datacenter_id != 0 || config.worker_id != 0) {
      return invalid_argument(
          "node_id_from_hostname takes the node id from the hostname: do not also set "
          "datacenter_id or worker_id");
    }
    auto ordinal = hostname_node_id(*layout);
    if (!ordinal.ok()) return ordinal.error();
    o.datacenter_id = *ordinal >> layout->worker_bits;
    o.worker_id = *ordinal & ((std::uint64_t{1} << layout->worker_bits) - 1);
  }
  o.clock_policy = config.clock_policy;
  o.max_wait = config.max_wait;
  o.max_drift = config.max_drift;
  o.max_start_wait = config.max_start_wait;
  o.sequence_start = config.sequence_start;
  o.state_file = std::filesystem::path(config.state_dir) / "generator.state";
  o.lock_state_directory = true;  // state_dir is this node's alone
  o.defer_start_wait = true;      // listen (and answer probes) while the clock catches up
  o.continue_above_mark = config.continue_above_mark;
  return o;
}

SegmentAllocatorOptions segment_allocator_options(const ServerConfig& config) {
  SegmentAllocatorOptions o;
  o.prefetch_at_used_fraction = config.segment_prefetch_at;
  o.max_step = config.segment_max_step;
  o.request_timeout = config.segment_request_timeout;
  o.max_batch = config.max_batch;
  o.auto_create_tags = config.segment_auto_create;
  o.auto_create_step = config.segment_auto_create_step;
  o.store.call_timeout = config.segment_store_timeout;
  o.retry_max = config.segment_retry_max;
  o.retry_initial = std::min(o.retry_initial, o.retry_max);
  return o;
}

std::string segment_store_url(const ServerConfig& config) {
  if (config.segment_store == kSegmentStoreOff) return "";
  if (!config.segment_store.empty()) return config.segment_store;
  // An absolute state_dir gives sqlite:///abs/segments.db (three slashes), a
  // relative one sqlite://rel/segments.db: both what open_segment_store reads.
  return "sqlite://" + (std::filesystem::path(config.state_dir) / "segments.db").string();
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

std::string redact_store_url(std::string_view url) {
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

}  // namespace snowid::server
