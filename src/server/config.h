// snowidd's configuration: defaults, then SNOWID_<OPTION> environment
// variables, then the TOML file, then command-line flags, each overriding the
// one before. snowid.example.toml documents every option with its default.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "snowid/error.h"
#include "snowid/etcd_coordinator.h"
#include "snowid/generator.h"
#include "snowid/layout.h"
#include "snowid/segment.h"

namespace snowid::server {

struct Endpoint {
  std::string host = "127.0.0.1";
  std::uint16_t port = 0;
  std::string text() const;
};

struct ServerConfig {
  Endpoint http{"127.0.0.1", 8080};
  Endpoint grpc{"127.0.0.1", 9090};
  std::uint64_t datacenter_id = 0;
  std::uint64_t worker_id = 0;
  // Cluster mode: "static" uses datacenter_id/worker_id as given; "etcd"
  // leases a node id from etcd, preferring datacenter_id/worker_id (or the
  // StatefulSet ordinal of the hostname with node_id_from_hostname).
  std::string coordinator = "static";
  std::string etcd_endpoints = "127.0.0.1:2379";
  std::string cluster = "snowid";
  bool node_id_from_hostname = false;
  // Static mode: HOST:PORT of other nodes' HTTP listeners, comma-separated,
  // asked at start for their node id and clock (peer_check.h).
  std::string peers;
  // "prefer": the configured id if free, else the lowest free one.
  // "require": only the configured id; wait (up to claim_timeout) while
  // another node holds it, then exit naming the holder.
  std::string node_id_policy = "prefer";
  std::chrono::seconds lease_ttl{10};
  std::chrono::milliseconds lease_safety_margin{1000};
  std::chrono::milliseconds max_peer_clock_offset{10000};
  std::chrono::milliseconds claim_timeout{30000};
  std::string etcd_user;
  std::string etcd_password;
  std::string etcd_tls_ca;
  std::string etcd_tls_cert;
  std::string etcd_tls_key;
  LayoutSpec layout;
  ClockPolicy clock_policy = ClockPolicy::kMonotonic;
  std::chrono::milliseconds max_wait{5};
  std::chrono::milliseconds max_drift{1000};
  std::chrono::milliseconds max_start_wait{10000};
  // Start on a logical clock above a mark the clock is behind (generator.h).
  bool continue_above_mark = false;
  SequenceStart sequence_start = SequenceStart::kZero;
  std::string state_dir = "./.snowid";
  std::uint32_t max_batch = 10000;
  int io_threads = 2;
  int max_connections = 10000;
  // Open gRPC connections at most (plain text; see descriptor_budget.h).
  int grpc_max_connections = 1000;
  std::uint32_t max_header_bytes = 8192;
  std::uint32_t max_body_bytes = 4096;
  std::chrono::milliseconds read_timeout{10000};
  std::chrono::milliseconds idle_timeout{60000};
  std::string tls_cert;
  std::string tls_key;
  std::string bearer_token;
  // A file holding the bearer token (its one line; a final newline is not
  // part of it): the way to give it without showing it in `ps`.
  std::string token_file;
  std::string log_level = "info";
  // Audit log (src/server/audit_log.h): a record of every block of IDs
  // issued, written before the response. Empty: off.
  std::string audit_log;
  bool audit_fsync = false;

  // Segment mode (see snowid.example.toml). Empty segment_store: the SQLite
  // file segments.db in state_dir; "off": no segment routes.
  std::string segment_store;
  bool segment_auto_create = false;
  std::int64_t segment_auto_create_step = 1000;
  double segment_prefetch_at = 0.1;
  std::int64_t segment_max_step = 1'000'000;
  std::chrono::milliseconds segment_request_timeout{1000};
  std::chrono::milliseconds segment_store_timeout{3000};
  std::chrono::milliseconds segment_retry_max{5000};
};

// The value of segment_store that turns segment mode off.
inline constexpr const char* kSegmentStoreOff = "off";

// Every option, as the flag/key/variable names use it, with its effective
// value as text: for --check-config and /v1/info.
std::vector<std::pair<std::string, std::string>> describe(const ServerConfig& config);

// --check-config's output: every option as TOML that loads back into the
// same configuration (and prints the same text again). Values that cannot be
// shown as they are (layout fields the preset decides, secrets, a store
// URL's password) are comments.
std::string effective_config_toml(const ServerConfig& config);

// Applies `name = value` (an option name in snake_case) to `config`. `source`
// names where the value came from, for the error message.
Status apply_option(ServerConfig& config, const std::string& name, const std::string& value,
                    const std::string& source);

// Reads options from SNOWID_<OPTION> environment variables.
Status apply_environment(ServerConfig& config, char** environ_entries);

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

// Checks the whole: the layout resolves, node ids fit, TLS has both files.
Status validate(const ServerConfig& config);

// Generator options for this configuration (state file inside state_dir).
Result<GeneratorOptions> generator_options(const ServerConfig& config);

// etcd coordinator options for this configuration (coordinator = "etcd").
Result<EtcdOptions> etcd_options(const ServerConfig& config);

// Segment allocator options for this configuration; max_batch is the server's.
SegmentAllocatorOptions segment_allocator_options(const ServerConfig& config);

// The segment store URL in effect ("sqlite://<state_dir>/segments.db" unless
// segment_store names one); empty if segment mode is off.
std::string segment_store_url(const ServerConfig& config);

// `url` with any password (user:PASSWORD@ or password=...) replaced by "***",
// for logs, /v1/info and --check-config.
std::string redact_store_url(std::string_view url);

}  // namespace snowid::server
