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

#include "audit_options.h"
#include "coordinator_options.h"
#include "endpoint.h"
#include "generator_config.h"
#include "grpc_options.h"
#include "http_options.h"
#include "resp_options.h"
#include "segment_config.h"
#include "snowid/error.h"
#include "snowid/ext/segment.h"
#include "snowid/generator.h"
#include "snowid/layout.h"
#include "snowid/opaque_id.h"
#include "thrift_options.h"

namespace snowid::server {

using snowid::Endpoint;

// Every option of snowidd, each subsystem's in its own struct (defaults on
// the fields); config.cc holds the one table of rows that fills them.
struct ServerConfig {
  HttpOptions http;
  GrpcOptions grpc;
  ThriftOptions thrift;  // off unless `thrift` names an address
  RespOptions resp;      // off unless `resp` names an address
  GeneratorConfig generator;
  CoordinatorOptions coordinator;
  std::uint32_t max_batch = 10000;
  std::string bearer_token;
  // A file holding the bearer token (its one line; a final newline is not
  // part of it): the way to give it without showing it in `ps`.
  std::string token_file;
  // A file holding the key of opaque IDs (opaque_id.h); empty: opaque IDs
  // are off. Only the path is ever shown, never the key.
  std::string opaque_key_file;
  std::string log_level = "info";
  // "text" (the default) or "json": one JSON object per log line.
  std::string log_format = "text";
  AuditOptions audit;
  SegmentConfig segment;
};

// What a valid configuration means, worked out once (resolve_config()):
// the layout resolved, the node id read (from the hostname if so
// configured), and each subsystem's options built from them.
struct ResolvedConfig {
  Layout layout;
  // The state file inside state_dir; the node id configured (a fixed one).
  GeneratorOptions generator;
  CoordinatorSetup coordinator;
  // segment_store_url(): empty if segment mode is off.
  std::string segment_url;
  // audit_log: empty if off.
  std::filesystem::path audit_log;
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

// Reads token_file, if set, into bearer_token. kInvalidArgument, naming the
// file, if it is missing, not a regular file, unreadable or empty, or if
// bearer_token is set too.
Status load_token_file(ServerConfig& config);

// The opaque ID permutation under opaque_key_file's key; null if the option
// is unset. kInvalidArgument, naming the option and the file (never the
// key), if the file is missing, unreadable or holds a key of the wrong size.
Result<std::unique_ptr<OpaqueIds>> load_opaque_ids(const ServerConfig& config);

// Checks the whole (no option set outside its scope, the layout resolves,
// node ids fit, TLS has both files, the coordinator's own checks) and
// builds what it means. Reads the hostname at most once.
Result<ResolvedConfig> resolve_config(const ServerConfig& config);

// resolve_config()'s checks alone.
Status validate(const ServerConfig& config);

// Segment allocator options for this configuration; max_batch is the server's.
SegmentAllocatorOptions segment_allocator_options(const ServerConfig& config);

// The segment store URL in effect ("sqlite://<state_dir>/segments.db" unless
// segment_store names one); empty if segment mode is off.
std::string segment_store_url(const ServerConfig& config);

// `url` with any password (user:PASSWORD@ or password=...) replaced by "***",
// for logs, /v1/info and --check-config.
std::string redact_store_url(std::string_view url);

}  // namespace snowid::server
