// snowidd's configuration: defaults, then SNOWID_<OPTION> environment
// variables, then the TOML file, then command-line flags, each overriding the
// one before. snowid.example.toml documents every option with its default.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "grpc_options.h"
#include "http_options.h"
#include "resp_options.h"
#include "service_config.h"
#include "snowid/error.h"
#include "thrift_options.h"

namespace snowid::server {

// Every option of snowidd: the service's (service_config.h) and each
// listener's. This file sits above the protocol folders, beside main.cc,
// since it gathers every listener's options; config.cc holds the one table
// of rows that fills them.
struct ServerConfig : ServiceConfig {
  HttpOptions http;
  GrpcOptions grpc;
  ThriftOptions thrift;  // off unless `thrift` names an address
  RespOptions resp;      // off unless `resp` names an address
};

// Every option, as the flag/key/variable names use it, with its effective
// value as text: for --check-config and /v1/info.
std::vector<std::pair<std::string, std::string>> describe(const ServerConfig& config);

// --check-config's output: every option as TOML that loads back into the
// same configuration (and prints the same text again). Values that cannot be
// shown as they are (layout fields the preset decides, secrets, a store
// URL's password) are comments.
std::string effective_config_toml(const ServerConfig& config);

// snowidd --help's words for option `name`: its type ("MILLISECONDS",
// "ADDR:PORT", ...) and one-line meaning, generated at build time from the
// comments of snowid.example.toml; nullptr if it has none. OptionHelp is
// defined in the generated option_help.h, which only its readers include,
// so that editing the example rebuilds no more than they.
struct OptionHelp;
const OptionHelp* option_help(std::string_view name);

// Applies `name = value` (an option name in snake_case) to `config`. `source`
// names where the value came from, for the error message.
Status apply_option(ServerConfig& config, const std::string& name, const std::string& value,
                    const std::string& source);

// True if `name` is one of the variables Kubernetes gives every pod of a
// namespace with a Service named snowid ("service links"):
// SNOWID_SERVICE_HOST, SNOWID_SERVICE_PORT, SNOWID_SERVICE_PORT_<NAME>,
// SNOWID_PORT, SNOWID_PORT_<n>_<TCP|UDP|SCTP> and the same followed by
// _PROTO, _PORT or _ADDR. No option's variable has one of these shapes.
bool is_kubernetes_service_link(std::string_view name);

// Reads options from SNOWID_<OPTION> environment variables. A SNOWID_
// variable that names no option is kInvalidArgument (a misspelt option must
// not pass unnoticed), except Kubernetes' service links, which are skipped
// and, if `ignored` is given, appended to it by name.
Status apply_environment(ServerConfig& config, char** environ_entries,
                         std::vector<std::string>* ignored = nullptr);

// Reads options from a TOML file. kInvalidArgument, naming the path, if it
// is missing, a directory, a dangling symbolic link, not a regular file or
// unreadable. An empty file is valid; `applied` (if given) counts the options
// it set, so that the caller can say so.
Status apply_toml_file(ServerConfig& config, const std::string& path,
                       std::size_t* applied = nullptr);

// Checks the whole (no option set outside its scope, each listener's own
// checks, then resolve_service()'s) and builds what it means, with every
// listener on advertised at its configured address.
Result<ResolvedConfig> resolve_config(const ServerConfig& config);

// resolve_config()'s checks alone.
Status validate(const ServerConfig& config);

}  // namespace snowid::server
