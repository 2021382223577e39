// The options of snowidd's shared service (everything but each protocol's
// own listener options): the network options every listener shares, the
// generator, the coordinator, the request limits and token, logging, the
// audit log and segment mode; and what a valid one means (ResolvedConfig).
// The whole configuration, with every protocol's options and the one table
// of option rows, is ServerConfig (src/server/config.h), above the protocols.
#pragma once

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
#include "net_options.h"
#include "option_rows.h"
#include "segment_config.h"
#include "snowid/error.h"
#include "snowid/generator.h"
#include "snowid/layout.h"
#include "snowid/opaque_id.h"
#include "snowid/ext/segment.h"

namespace snowid::server {

using snowid::Endpoint;

struct ServiceConfig {
  NetOptions net;
  GeneratorConfig generator;
  CoordinatorOptions coordinator;
  std::uint32_t max_batch = 10000;
  std::string bearer_token;
  // A file holding the bearer token (its one line; a final newline is not
  // part of it): the way to give it without showing it in `ps`.
  std::string token_file;
  // A TOML file of named tokens, each limited to tags, Snowflake IDs or
  // admin (access_tokens.h); reread when it changes. Not with bearer_token
  // or token_file.
  std::string tokens_file;
  // A file holding the key of opaque IDs (opaque_id.h); empty: opaque IDs
  // are off. Only the path is ever shown, never the key.
  std::string opaque_key_file;
  std::string log_level = "info";
  // "text" (the default) or "json": one JSON object per log line.
  std::string log_format = "text";
  AuditOptions audit;
  SegmentConfig segment;
};

// What a valid configuration means, worked out once (resolve_service()):
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

// The service's own rows, in table order: max_batch; later bearer_token,
// token_file, tokens_file, opaque_key_file, log_level and log_format; later segment_store.
OptionRows<ServiceConfig> batch_rows();
OptionRows<ServiceConfig> access_rows();
OptionRows<ServiceConfig> segment_store_rows();

// Checks the service's options (the layout resolves, node ids fit, TLS has
// both files, the coordinator's own checks) and builds what they mean.
// `advertised_addresses` ("http 127.0.0.1:8080", ...) are what a claim
// publishes before the listeners bind. Reads the hostname at most once.
Result<ResolvedConfig> resolve_service(const ServiceConfig& config,
                                       std::vector<std::string> advertised_addresses);

// The token a token file holds: its first line, without a final carriage
// return (it may be empty; callers refuse that in their own words).
// kInvalidArgument naming the file if it is not a regular file or cannot be
// read. token_file and a tokens file's token_file entries read alike.
Result<std::string> read_token_file(const std::string& path);

// Reads token_file, if set, into bearer_token. kInvalidArgument, naming the
// file, if it is missing, not a regular file, unreadable or empty, or if
// bearer_token is set too; and if tokens_file is set with either.
Status load_token_file(ServiceConfig& config);

// The opaque ID permutation under opaque_key_file's key; null if the option
// is unset. kInvalidArgument, naming the option and the file (never the
// key), if the file is missing, unreadable or holds a key of the wrong size.
Result<std::unique_ptr<OpaqueIds>> load_opaque_ids(const ServiceConfig& config);

// Segment allocator options for this configuration; max_batch is the server's.
SegmentAllocatorOptions segment_allocator_options(const ServiceConfig& config);

// The segment store URL in effect ("sqlite://<state_dir>/segments.db" unless
// segment_store names one); empty if segment mode is off.
std::string segment_store_url(const ServiceConfig& config);

// `url` with any password (user:PASSWORD@ or password=...) replaced by "***",
// for logs, /v1/info and --check-config.
std::string redact_store_url(std::string_view url);

}  // namespace snowid::server
