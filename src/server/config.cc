#include "config.h"

#include <fmt/format.h>
#include <toml++/toml.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <functional>

#include "listeners.h"
#include "option_help.h"

namespace snowid::server {
namespace {

using Row = OptionRow<ServerConfig>;
using Rows = OptionRows<ServerConfig>;

// `rows` of a part of the service's options as rows of the whole.
template <typename Part>
Rows service_rows(Part ServiceConfig::*part, const OptionRows<Part>& rows) {
  return widen<ServerConfig>(lift(part, rows));
}

// The one table of options: each subsystem's rows, lifted into
// ServerConfig, in the order describe(), --check-config and --help show.
const Rows& options() {
  using C = ServerConfig;
  using S = ServiceConfig;
  static const Rows kOptions = concat<C>({
      lift(&C::http, http_endpoint_rows()),
      lift(&C::grpc, grpc_endpoint_rows()),
      service_rows(&S::generator, node_id_rows()),
      service_rows(&S::coordinator, coordinator_option_rows()),
      // continue_above_mark needs the state file that only a fixed node id keeps.
      widen<C>(restrict_row<S>(lift(&S::generator, generator_rows()), "continue_above_mark",
                               [](const S& c) { return outside_fixed_node_id(c.coordinator); })),
      widen<C>(batch_rows()),
      service_rows(&S::net, net_thread_rows()),
      lift(&C::http, http_connection_rows()),
      lift(&C::grpc, grpc_connection_rows()),
      lift(&C::http, http_request_rows()),
      service_rows(&S::net, net_timeout_rows()),
      lift(&C::thrift, thrift_rows()),
      lift(&C::resp, resp_rows()),
      widen<C>(access_rows()),
      service_rows(&S::audit, audit_rows()),
      widen<C>(segment_store_rows()),
      service_rows(&S::segment, segment_rows()),
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
  if (Status listeners = check_listener_options(config); !listeners.ok()) return listeners.error();
  return resolve_service(config, configured_addresses(config));
}

Status validate(const ServerConfig& config) {
  auto resolved = resolve_config(config);
  if (!resolved.ok()) return resolved.error();
  return {};
}

}  // namespace snowid::server
