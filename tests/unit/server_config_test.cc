// snowidd's configuration helpers that need no running server.
#include <gtest/gtest.h>
#include <toml++/toml.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "config.h"
#include "etcd_settings.h"
#include "json_log.h"
#include "listeners.h"
#include "option_help.h"
#include "redis_settings.h"
#include "text_file.h"
#include "zookeeper_settings.h"

namespace snowid::server {
namespace {

TEST(RedactStoreUrl, HidesTheUserInfoPassword) {
  EXPECT_EQ(redact_store_url("postgresql://snowid:secret@db:5432/ids?sslmode=require"),
            "postgresql://snowid:***@db:5432/ids?sslmode=require");
  EXPECT_EQ(redact_store_url("postgres://u:p@[::1]/db"), "postgres://u:***@[::1]/db");
  EXPECT_EQ(redact_store_url("postgresql://a:x@h1/db sqlite:///s.db postgresql://b:y@h2/db"),
            "postgresql://a:***@h1/db sqlite:///s.db postgresql://b:***@h2/db");
  // A password with a space is one URL's, not two URLs.
  EXPECT_EQ(redact_store_url("postgresql://u:s pw@h/db"), "postgresql://u:***@h/db");
  // The MySQL store reads its user info the same way: the last '@' before the first '/'.
  EXPECT_EQ(redact_store_url("mysql://leaf:p@ss@db:3306/leaf?layout=leaf"),
            "mysql://leaf:***@db:3306/leaf?layout=leaf");
}

// libpq ends the user info at the first '/', not at '?' or '#': found by
// fuzz_config (tests/fuzz/corpus/config/crash-redact-question-mark-in-userinfo).
TEST(RedactStoreUrl, HidesAUserInfoPasswordAfterAQuestionMarkOrAHash) {
  EXPECT_EQ(redact_store_url("postgresql://u:pa?ss@h/db"), "postgresql://u:***@h/db");
  EXPECT_EQ(redact_store_url("postgresql://u:pa#ss@h/db"), "postgresql://u:***@h/db");
  EXPECT_EQ(redact_store_url("postgresql://s?owid:secret@db/ids"),
            "postgresql://s?owid:***@db/ids");
  EXPECT_EQ(redact_store_url("postgres://?:e@"), "postgres://?:***@");
}

TEST(RedactStoreUrl, HidesThePasswordParameter) {
  EXPECT_EQ(redact_store_url("postgresql://snowid@db/ids?sslmode=require&password=secret"),
            "postgresql://snowid@db/ids?sslmode=require&password=***");
}

// The query starts at the first '?' after the user info (libpq), not at one
// inside it.
TEST(RedactStoreUrl, HidesThePasswordParameterAfterAQuestionMarkInTheUserInfo) {
  EXPECT_EQ(redact_store_url("postgresql://s?owid@db/ids?password=secret"),
            "postgresql://s?owid@db/ids?password=***");
  EXPECT_EQ(redact_store_url("postgresql://u?:pw@db/ids?password=secret"),
            "postgresql://u?:***@db/ids?password=***");
  EXPECT_EQ(redact_store_url("postgresql://u@db?password=x@y/ids"),
            "postgresql://u@db?password=***");
}

// libpq decodes %XX in parameter names.
TEST(RedactStoreUrl, HidesAPasswordParameterWithAPercentEncodedName) {
  EXPECT_EQ(redact_store_url("postgresql://u@h/db?pass%77ord=secret"),
            "postgresql://u@h/db?pass%77ord=***");
  EXPECT_EQ(redact_store_url("postgresql://u@h/db?sslmode=require&%70%61%73%73word=secret"),
            "postgresql://u@h/db?sslmode=require&%70%61%73%73word=***");
  EXPECT_EQ(redact_store_url("postgresql://u@h/db?pass%7word=x"),
            "postgresql://u@h/db?pass%7word=x");
}

TEST(RedactStoreUrl, LeavesUrlsWithoutAPasswordAlone) {
  for (const char* url : {"sqlite:///var/lib/snowid/segments.db", "sqlite://.snowid/segments.db",
                          "postgresql://snowid@db:5432/ids", "postgresql:///ids?host=/run/pg"}) {
    EXPECT_EQ(redact_store_url(url), url);
  }
}

// A mode the options are walked through: the settings that decide which
// options have a meaning.
struct Mode {
  std::string coordinator;
  std::string clock_policy;
  bool segments;
  bool audit;
  std::string name() const {
    return coordinator + "/" + clock_policy + (segments ? "/segments" : "/no-segments") +
           (audit ? "/audit" : "/no-audit");
  }
};

// Where each option has a meaning (the specification the config table must
// follow), and a valid value other than its default. An option of
// snowid.example.toml missing here fails the walk: a new option must say
// where it applies.
struct OptionCase {
  std::string value;
  std::function<bool(const Mode&)> applies;
};

const std::map<std::string, OptionCase>& option_cases(const std::string& file) {
  const auto always = [](const Mode&) { return true; };
  const auto never = [](const Mode&) { return false; };
  const auto etcd = [](const Mode& m) { return m.coordinator == "etcd"; };
  const auto redis = [](const Mode& m) { return m.coordinator == "redis"; };
  const auto zookeeper = [](const Mode& m) { return m.coordinator == "zookeeper"; };
  const auto postgres = [](const Mode& m) { return m.coordinator == "postgres"; };
  const auto mysql = [](const Mode& m) { return m.coordinator == "mysql"; };
  const auto leased = [](const Mode& m) { return m.coordinator != "static"; };
  const auto segments = [](const Mode& m) { return m.segments; };
  static const std::map<std::string, OptionCase> cases = {
      {"http", {"127.0.0.1:8081", always}},
      // Off: the gRPC listener is on by default (grpc_max_connections below
      // is set while it is on); GrpcListenerOff covers an address.
      {"grpc", {"off", always}},
      {"io_threads", {"3", always}},
      {"max_connections", {"500", always}},
      {"grpc_max_connections", {"100", always}},
      // The options of the Thrift and RESP listeners apply only while the
      // listener is on, which no mode below turns on.
      {"thrift", {"127.0.0.1:7610", always}},
      {"thrift_max_connections", {"100", never}},
      {"thrift_idle_timeout_ms", {"1000", never}},
      {"thrift_max_frame_bytes", {"4096", never}},
      {"thrift_auth_timeout_ms", {"2000", never}},
      {"thrift_unauthenticated_share", {"0.5", never}},
      {"thrift_trusted_networks", {"10.0.0.0/8", never}},
      {"thrift_tls", {"true", never}},
      {"resp", {"127.0.0.1:6380", always}},
      {"resp_max_connections", {"100", never}},
      {"resp_idle_timeout_ms", {"1000", never}},
      {"resp_max_pending_bytes", {"65536", never}},
      {"resp_max_bulk_bytes", {"4096", never}},
      {"resp_max_arguments", {"64", never}},
      {"resp_max_queued_commands", {"100", never}},
      {"resp_max_queued_bytes", {"1048576", never}},
      {"resp_auth_timeout_ms", {"2000", never}},
      {"resp_unauthenticated_share", {"0.5", never}},
      {"resp_trusted_networks", {"10.0.0.0/8", never}},
      {"resp_tls", {"true", never}},
      {"max_header_bytes", {"4096", always}},
      {"max_body_bytes", {"2048", always}},
      {"idle_timeout_ms", {"1000", always}},
      {"read_timeout_ms", {"1000", always}},
      {"max_batch", {"500", always}},
      {"bearer_token", {"secret", always}},
      {"token_file", {file, always}},
      {"tokens_file", {file, always}},
      {"opaque_key_file", {file, always}},
      {"tls_cert", {file, always}},  // with tls_key set too, below
      {"tls_key", {file, always}},
      {"datacenter_id", {"1", always}},
      {"worker_id", {"2", always}},
      {"etcd_endpoints", {"127.0.0.1:2380", etcd}},
      {"peers",
       {"127.0.0.1:1,127.0.0.1:2", [](const Mode& m) { return m.coordinator == "static"; }}},
      {"cluster", {"other", leased}},
      {"node_id_policy", {"require", leased}},
      {"lease_ttl_s", {"20", leased}},
      {"lease_safety_margin_ms", {"2000", leased}},
      {"max_peer_clock_offset_ms", {"5000", leased}},
      {"share_id_space", {"true", leased}},
      {"claim_timeout_ms", {"1000", leased}},
      {"store_request_timeout_ms", {"1500", leased}},
      {"etcd_user", {"user", etcd}},
      {"etcd_password", {"password", etcd}},
      {"etcd_password_file", {file, etcd}},
      {"etcd_tls_ca", {file, etcd}},
      {"etcd_tls_cert", {file, etcd}},
      {"etcd_tls_key", {file, etcd}},
      {"redis_endpoints", {"127.0.0.1:6380", redis}},
      {"redis_user", {"user", redis}},
      {"redis_password", {"password", redis}},
      {"redis_password_file", {file, redis}},
      {"redis_database", {"3", redis}},
      // Each Sentinel option with the others (EverySentinelOptionNeedsTheSentinels
      // covers one alone).
      {"redis_sentinels", {"127.0.0.1:26379", redis}},
      {"redis_sentinel_master", {"snowid", redis}},
      {"redis_sentinel_password", {"password", redis}},
      {"redis_sentinel_password_file", {file, redis}},
      {"zookeeper_endpoints", {"127.0.0.1:2182", zookeeper}},
      {"zookeeper_user", {"user", zookeeper}},
      {"zookeeper_password", {"password", zookeeper}},
      {"zookeeper_password_file", {file, zookeeper}},
      {"zookeeper_tick_ms", {"1000", zookeeper}},
      {"postgres_url", {"postgresql://ids@127.0.0.1:5433/ids", postgres}},
      {"mysql_url", {"mysql://ids@127.0.0.1:3307/ids", mysql}},
      {"preset", {"discord", always}},
      {"timestamp_bits", {"40", always}},
      {"datacenter_bits", {"4", always}},
      {"worker_bits", {"4", always}},
      {"sequence_bits", {"11", always}},
      {"time_unit_ms", {"2", always}},
      {"epoch", {"2020-01-01T00:00:00.000Z", always}},
      {"sequence_position", {"high", always}},
      {"epoch_zone", {"Asia/Shanghai", always}},
      {"max_wait_ms", {"10", [](const Mode& m) { return m.clock_policy == "wait"; }}},
      {"max_start_wait_ms", {"1000", [](const Mode& m) { return m.clock_policy == "wait"; }}},
      {"max_drift_ms", {"2000", [](const Mode& m) { return m.clock_policy == "monotonic"; }}},
      {"continue_above_mark", {"true", [](const Mode& m) { return m.coordinator == "static"; }}},
      {"sequence_start", {"random", always}},
      {"state_dir", {"/tmp/elsewhere", always}},
      {"log_level", {"debug", always}},
      {"log_format", {"json", always}},
      {"audit_fsync", {"true", [](const Mode& m) { return m.audit; }}},
      {"segment_auto_create", {"true", segments}},
      {"segment_auto_create_step", {"10", segments}},
      {"segment_prefetch_at", {"0.5", segments}},
      {"segment_max_step", {"5000", segments}},
      {"segment_request_timeout_ms", {"500", segments}},
      {"segment_store_timeout_ms", {"500", segments}},
      {"segment_retry_max_ms", {"500", segments}},
      {"tag_audit_log", {"\"/tmp/snowid-tag-audit.log\"", segments}},
      {"business_width_warning", {"0.5", segments}},
      {"tag_refresh_ms", {"500", segments}},
  };
  return cases;
}

// The options that choose the mode, and node_id_from_hostname (it depends
// on the machine's hostname: tested through node_id_from_pod_name).
const std::set<std::string> kModeOptions = {"coordinator", "clock_policy", "segment_store",
                                            "audit_log", "node_id_from_hostname"};

// No option is silently ignored: every option of snowid.example.toml, set to
// a value other than its default, in every mode, is either accepted (where
// it has a meaning) or refused naming it (where it has none).
TEST(ConfigOptions, EveryExampleOptionInEveryModeIsUsedOrRefused) {
  const std::string file = ::testing::TempDir() + "/snowid-config-walk.pem";
  std::ofstream(file) << "not read by validate\n";
  const auto table = toml::parse_file(SNOWID_EXAMPLE_CONFIG);
  const auto& cases = option_cases(file);
  std::vector<Mode> modes;
  for (const char* coordinator : {"static", "etcd", "redis", "zookeeper", "postgres", "mysql"}) {
    for (const char* policy : {"reject", "wait", "monotonic"}) {
      for (bool segments : {false, true}) {
        for (bool audit : {false, true}) modes.push_back({coordinator, policy, segments, audit});
      }
    }
  }
  int walked = 0;
  for (const auto& [key, node] : table) {
    const std::string name(key.str());
    if (kModeOptions.count(name) > 0) continue;
    auto found = cases.find(name);
    ASSERT_NE(found, cases.end()) << "say where option " << name << " applies in option_cases()";
    for (const Mode& mode : modes) {
      SCOPED_TRACE(name + " in " + mode.name());
      ServerConfig config;
      ASSERT_TRUE(apply_option(config, "coordinator", mode.coordinator, "test").ok());
      ASSERT_TRUE(apply_option(config, "clock_policy", mode.clock_policy, "test").ok());
      std::vector<std::pair<std::string, std::string>> extra;
      if (!mode.segments) extra.emplace_back("segment_store", "off");
      if (mode.audit) extra.emplace_back("audit_log", file);
      Status set = apply_option(config, name, found->second.value, "test");
      ASSERT_TRUE(set.ok()) << set.error().message;
      if (name == "tls_cert") extra.emplace_back("tls_key", file);
      if (name == "tls_key") extra.emplace_back("tls_cert", file);
      if (name.rfind("redis_sentinel", 0) == 0 && mode.coordinator == "redis") {
        if (name != "redis_sentinels") extra.emplace_back("redis_sentinels", "127.0.0.1:26379");
        if (name != "redis_sentinel_master") extra.emplace_back("redis_sentinel_master", "snowid");
      }
      for (const auto& [other, value] : extra) {
        ASSERT_TRUE(apply_option(config, other, value, "test").ok());
      }
      const Status valid = validate(config);
      if (found->second.applies(mode)) {
        EXPECT_TRUE(valid.ok()) << valid.error().message;
      } else {
        ASSERT_FALSE(valid.ok()) << "silently ignored";
        EXPECT_NE(valid.error().message.find(name), std::string::npos) << valid.error().message;
      }
      ++walked;
    }
  }
  EXPECT_GT(walked, 40 * static_cast<int>(modes.size()));
}

// snowid.example.toml is the manual: it sets every option row of the table,
// under the row's name, and nothing else (a layout field, whose default is
// the preset's, is shown commented out: "# timestamp_bits = 41"); the
// config fuzz target's corpus starts from an exact copy of it.
TEST(ConfigOptions, TheExampleConfigListsEveryOptionRowAndItsCorpusCopyMatches) {
  auto text_of = [](const char* path) {
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  };
  const std::string example = text_of(SNOWID_EXAMPLE_CONFIG);
  ASSERT_FALSE(example.empty());
  std::set<std::string> keys;
  for (const auto& [key, node] : toml::parse(example)) keys.insert(std::string(key.str()));
  for (const auto& [row, default_value] : describe(ServerConfig{})) {
    if (default_value == "(preset)") {
      EXPECT_NE(example.find("\n# " + row + " = "), std::string::npos) << row << " is not in it";
    } else {
      EXPECT_EQ(keys.count(row), 1u) << row << " is not in it";
    }
    keys.erase(row);
  }
  EXPECT_TRUE(keys.empty()) << *keys.begin() << " is no option";
  EXPECT_TRUE(example == text_of(SNOWID_FUZZ_CONFIG_EXAMPLE))
      << SNOWID_FUZZ_CONFIG_EXAMPLE << " differs from " << SNOWID_EXAMPLE_CONFIG
      << ": copy it again";
}

// --check-config's output loads back into the same configuration.
TEST(ConfigOptions, CheckConfigOutputLoadsBackUnchanged) {
  const std::string path = ::testing::TempDir() + "/snowid-check-config.toml";
  for (const std::vector<std::pair<std::string, std::string>>& given :
       std::vector<std::vector<std::pair<std::string, std::string>>>{
           {},
           {{"preset", "sonyflake"}},
           {{"preset", "baidu"}, {"epoch", "2024-01-01T00:00:00.000Z"}, {"worker_id", "7"}},
           {{"preset", "baidu"}, {"epoch", "2024-01-01"}, {"epoch_zone", "Asia/Shanghai"}},
           {{"coordinator", "etcd"}, {"cluster", "a \"quoted\" name"}, {"lease_ttl_s", "30"}},
           {{"segment_store", "off"}, {"clock_policy", "wait"}, {"max_wait_ms", "50"}},
           {{"grpc", "off"}, {"thrift", "127.0.0.1:7610"}},
       }) {
    ServerConfig config;
    for (const auto& [name, value] : given)
      ASSERT_TRUE(apply_option(config, name, value, "t").ok());
    ASSERT_TRUE(validate(config).ok()) << validate(config).error().message;
    const std::string printed = effective_config_toml(config);
    std::ofstream(path, std::ios::trunc) << printed;
    ServerConfig loaded;
    Status read = apply_toml_file(loaded, path);
    ASSERT_TRUE(read.ok()) << read.error().message << "\n" << printed;
    ASSERT_TRUE(validate(loaded).ok()) << validate(loaded).error().message;
    EXPECT_EQ(effective_config_toml(loaded), printed);
  }
}

// The value of option `name` as describe() (and --check-config) shows it.
std::string described(const ServerConfig& config, const std::string& name) {
  for (const auto& [option, value] : describe(config)) {
    if (option == name) return value;
  }
  return "(not described)";
}

// grpc = "off", from any source, turns the gRPC listener off: no descriptors
// are planned for it, a claim advertises HTTP alone, and its connection
// limit is refused as set where it has no meaning. The default stays on.
TEST(GrpcListenerOff, OffFromFlagsFileAndEnvironment) {
  const ServerConfig defaults;
  ASSERT_TRUE(defaults.grpc.endpoint.has_value());
  EXPECT_EQ(described(defaults, "grpc"), "127.0.0.1:9090");
  const auto wanted_default = wanted_connections(defaults);
  EXPECT_EQ(std::count_if(wanted_default.begin(), wanted_default.end(),
                          [](const auto& w) { return w.first == "grpc"; }),
            1);

  ServerConfig flag;
  ASSERT_TRUE(apply_option(flag, "grpc", "off", "command line").ok());
  ServerConfig from_file;
  const std::string path = ::testing::TempDir() + "/snowid-grpc-off.toml";
  std::ofstream(path, std::ios::trunc) << "grpc = \"off\"\n";
  ASSERT_TRUE(apply_toml_file(from_file, path).ok());
  ServerConfig from_environment;
  std::string entry = "SNOWID_GRPC=off";
  char* environ_entries[] = {entry.data(), nullptr};
  ASSERT_TRUE(apply_environment(from_environment, environ_entries).ok());

  for (const ServerConfig* config : {&flag, &from_file, &from_environment}) {
    EXPECT_FALSE(config->grpc.endpoint.has_value());
    EXPECT_EQ(described(*config, "grpc"), "off");
    const Status valid = validate(*config);
    EXPECT_TRUE(valid.ok()) << valid.error().message;
    for (const auto& [protocol, connections] : wanted_connections(*config)) {
      EXPECT_NE(protocol, "grpc") << connections;
    }
    auto resolved = resolve_config(*config);
    ASSERT_TRUE(resolved.ok()) << resolved.error().message;
    EXPECT_EQ(resolved->coordinator.advertised_addresses,
              std::vector<std::string>{"http 127.0.0.1:8080"});
  }

  // An address turns it back on.
  ASSERT_TRUE(apply_option(flag, "grpc", "127.0.0.1:9091", "command line").ok());
  ASSERT_TRUE(flag.grpc.endpoint.has_value());
  EXPECT_EQ(flag.grpc.endpoint->text(), "127.0.0.1:9091");
  auto resolved = resolve_config(flag);
  ASSERT_TRUE(resolved.ok()) << resolved.error().message;
  EXPECT_EQ(resolved->coordinator.advertised_addresses,
            (std::vector<std::string>{"http 127.0.0.1:8080", "grpc 127.0.0.1:9091"}));
}

TEST(GrpcListenerOff, ItsConnectionLimitIsRefusedWhileOff) {
  ServerConfig config;
  ASSERT_TRUE(apply_option(config, "grpc", "off", "t").ok());
  ASSERT_TRUE(apply_option(config, "grpc_max_connections", "100", "t").ok());
  const Status valid = validate(config);
  ASSERT_FALSE(valid.ok()) << "grpc_max_connections silently ignored";
  EXPECT_NE(valid.error().message.find("grpc_max_connections"), std::string::npos)
      << valid.error().message;

  ServerConfig zero;
  ASSERT_TRUE(apply_option(zero, "grpc_max_connections", "0", "t").ok());
  const Status refused = validate(zero);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message.find("grpc_max_connections must be at least 1"),
            std::string::npos)
      << refused.error().message;
}

TEST(GrpcListenerOff, BadValuesAreRefusedNamingTheOption) {
  for (const char* bad : {"", "of", "OFF", "none", "127.0.0.1", "127.0.0.1:99999", ":9090"}) {
    ServerConfig config;
    const Status set = apply_option(config, "grpc", bad, "command line");
    ASSERT_FALSE(set.ok()) << "'" << bad << "' accepted";
    EXPECT_NE(set.error().message.find("grpc"), std::string::npos) << set.error().message;
    EXPECT_EQ(set.error().message.find('\n'), std::string::npos) << set.error().message;
    EXPECT_EQ(described(config, "grpc"), "127.0.0.1:9090") << bad;
  }
  std::string entry = "SNOWID_GRPC=nowhere";
  char* environ_entries[] = {entry.data(), nullptr};
  ServerConfig from_environment;
  const Status refused = apply_environment(from_environment, environ_entries);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message.find("SNOWID_GRPC"), std::string::npos)
      << refused.error().message;
}

// Kubernetes' service links for a Service named snowid are told apart from
// options, including misspelt ones.
TEST(ConfigEnvironment, KubernetesServiceLinksAreRecognisedByShape) {
  for (const char* link :
       {"SNOWID_SERVICE_HOST", "SNOWID_SERVICE_PORT", "SNOWID_SERVICE_PORT_HTTP",
        "SNOWID_SERVICE_PORT_GRPC_API2", "SNOWID_PORT", "SNOWID_PORT_8080_TCP",
        "SNOWID_PORT_9090_TCP_PROTO", "SNOWID_PORT_9090_TCP_PORT", "SNOWID_PORT_9090_TCP_ADDR",
        "SNOWID_PORT_53_UDP", "SNOWID_PORT_7609_SCTP_ADDR"}) {
    EXPECT_TRUE(is_kubernetes_service_link(link)) << link;
  }
  for (const char* other :
       {"SNOWID_HTTPP", "SNOWID_HTTP", "SNOWID_WORKER_ID", "SNOWID_PORTS", "SNOWID_PORT_",
        "SNOWID_PORT_8080", "SNOWID_PORT_8080_HTTP", "SNOWID_PORT_X_TCP", "SNOWID_PORT_8080_TCP_",
        "SNOWID_PORT_8080_TCP_HOST", "SNOWID_SERVICE_HOSTS", "SNOWID_SERVICE_PORT_",
        "SNOWID_SERVICE_PORT_http", "SNOWID_SERVICE", "SERVICE_HOST", "OTHER_PORT_80_TCP"}) {
    EXPECT_FALSE(is_kubernetes_service_link(other)) << other;
  }
}

TEST(ConfigEnvironment, ServiceLinksAreSkippedAndNamedMisspeltOptionsRefused) {
  std::vector<std::string> entries = {"SNOWID_SERVICE_HOST=10.0.0.7",
                                      "SNOWID_SERVICE_PORT=8080",
                                      "SNOWID_SERVICE_PORT_HTTP=8080",
                                      "SNOWID_PORT=tcp://10.0.0.7:8080",
                                      "SNOWID_PORT_8080_TCP=tcp://10.0.0.7:8080",
                                      "SNOWID_PORT_8080_TCP_PROTO=tcp",
                                      "SNOWID_PORT_8080_TCP_PORT=8080",
                                      "SNOWID_PORT_8080_TCP_ADDR=10.0.0.7",
                                      "SNOWID_WORKER_ID=3",
                                      "PATH=/usr/bin"};
  auto environ_of = [](std::vector<std::string>& strings) {
    std::vector<char*> out;
    for (std::string& s : strings) out.push_back(s.data());
    out.push_back(nullptr);
    return out;
  };
  auto environ_entries = environ_of(entries);
  ServerConfig config;
  std::vector<std::string> ignored;
  Status applied = apply_environment(config, environ_entries.data(), &ignored);
  ASSERT_TRUE(applied.ok()) << applied.error().message;
  EXPECT_EQ(config.generator.worker_id, 3u);
  EXPECT_EQ(ignored, (std::vector<std::string>{
                         "SNOWID_SERVICE_HOST", "SNOWID_SERVICE_PORT", "SNOWID_SERVICE_PORT_HTTP",
                         "SNOWID_PORT", "SNOWID_PORT_8080_TCP", "SNOWID_PORT_8080_TCP_PROTO",
                         "SNOWID_PORT_8080_TCP_PORT", "SNOWID_PORT_8080_TCP_ADDR"}));

  entries.push_back("SNOWID_HTTPP=127.0.0.1:8081");
  environ_entries = environ_of(entries);
  ServerConfig misspelt;
  Status refused = apply_environment(misspelt, environ_entries.data());
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message.find("SNOWID_HTTPP"), std::string::npos)
      << refused.error().message;
  EXPECT_NE(refused.error().message.find("unknown option 'httpp'"), std::string::npos)
      << refused.error().message;
}

// A password file gives the password without its final newline; a file that
// is missing or holds nothing, or a password given both ways, is an error
// naming the option.
TEST(SecretFiles, ThePasswordIsTheFileWithoutItsFinalNewline) {
  const std::string path = ::testing::TempDir() + "/snowid-secret";
  for (const auto& [content, secret] :
       std::vector<std::pair<std::string, std::string>>{{"s3cret\n", "s3cret"},
                                                        {"s3cret", "s3cret"},
                                                        {"s3cret\r\n", "s3cret"},
                                                        {" two\nlines \n\n", " two\nlines \n"}}) {
    std::ofstream(path, std::ios::trunc | std::ios::binary) << content;
    auto read = secret_or_file("", path, "etcd_password");
    ASSERT_TRUE(read.ok()) << read.error().message;
    EXPECT_EQ(*read, secret);
  }
  auto given = secret_or_file("flag", "", "etcd_password");
  ASSERT_TRUE(given.ok());
  EXPECT_EQ(*given, "flag");
  auto both = secret_or_file("flag", path, "etcd_password");
  ASSERT_FALSE(both.ok());
  EXPECT_EQ(both.error().message,
            "etcd_password and etcd_password_file are both set: give the secret once");
  for (const std::string content : {"", "\n", "\r\n"}) {
    std::ofstream(path, std::ios::trunc | std::ios::binary) << content;
    auto empty = secret_or_file("", path, "redis_password");
    ASSERT_FALSE(empty.ok());
    EXPECT_NE(empty.error().message.find("redis_password_file"), std::string::npos)
        << empty.error().message;
    EXPECT_NE(empty.error().message.find(path), std::string::npos) << empty.error().message;
  }
  for (const std::string& unreadable : {path + ".missing", ::testing::TempDir()}) {
    auto missing = secret_or_file("", unreadable, "zookeeper_password");
    ASSERT_FALSE(missing.ok()) << unreadable;
    EXPECT_NE(missing.error().message.find("zookeeper_password_file"), std::string::npos)
        << missing.error().message;
  }
}

// Each store's password_file reaches the store's options, from the
// configuration as resolved, and a bad one stops validation naming it.
TEST(SecretFiles, EachStoresPasswordFileReachesItsOptions) {
  const std::string path = ::testing::TempDir() + "/snowid-store-secret";
  std::ofstream(path, std::ios::trunc) << "from-file\n";
  auto resolved_with = [](const std::string& store, const std::string& option,
                          const std::string& value) {
    ServerConfig config;
    EXPECT_TRUE(apply_option(config, "coordinator", store, "t").ok());
    EXPECT_TRUE(apply_option(config, option, value, "t").ok());
    return resolve_config(config);
  };
  auto etcd = resolved_with("etcd", "etcd_password_file", path);
  ASSERT_TRUE(etcd.ok()) << etcd.error().message;
  EXPECT_EQ(etcd_options(etcd->coordinator)->password, "from-file");
  auto redis = resolved_with("redis", "redis_password_file", path);
  ASSERT_TRUE(redis.ok()) << redis.error().message;
  EXPECT_EQ(redis_options(redis->coordinator)->password, "from-file");
  auto zookeeper = resolved_with("zookeeper", "zookeeper_password_file", path);
  ASSERT_TRUE(zookeeper.ok()) << zookeeper.error().message;
  EXPECT_EQ(zookeeper_options(zookeeper->coordinator)->password, "from-file");

  auto missing = resolved_with("redis", "redis_password_file", path + ".missing");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().message.find("redis_password_file"), std::string::npos)
      << missing.error().message;
  ServerConfig both;
  ASSERT_TRUE(apply_option(both, "coordinator", "etcd", "t").ok());
  ASSERT_TRUE(apply_option(both, "etcd_password", "flag", "t").ok());
  ASSERT_TRUE(apply_option(both, "etcd_password_file", path, "t").ok());
  EXPECT_FALSE(validate(both).ok());
}

// Redis with Sentinel: the Sentinels and a master name replace the
// endpoints; every combination that would leave an option unused, or the
// master unknown, is refused on one line naming the options.
TEST(RedisSentinelOptions, TheSentinelsReplaceTheEndpointsAndNeedAMasterName) {
  const std::string path = ::testing::TempDir() + "/snowid-sentinel-secret";
  std::ofstream(path, std::ios::trunc) << "sentinel-secret\n";
  auto resolved_with = [](const std::vector<std::pair<std::string, std::string>>& given) {
    ServerConfig config;
    EXPECT_TRUE(apply_option(config, "coordinator", "redis", "t").ok());
    for (const auto& [option, value] : given) {
      const Status set = apply_option(config, option, value, "t");
      EXPECT_TRUE(set.ok()) << option << ": " << set.error().message;
    }
    return resolve_config(config);
  };
  auto sentinel = resolved_with({{"redis_sentinels", "127.0.0.1:26379,[::1]:26380"},
                                 {"redis_sentinel_master", "snowid"},
                                 {"redis_sentinel_password_file", path}});
  ASSERT_TRUE(sentinel.ok()) << sentinel.error().message;
  auto options = redis_options(sentinel->coordinator);
  ASSERT_TRUE(options.ok()) << options.error().message;
  EXPECT_TRUE(options->endpoints.empty());
  EXPECT_EQ(options->sentinels, (std::vector<std::string>{"127.0.0.1:26379", "[::1]:26380"}));
  EXPECT_EQ(options->sentinel_master, "snowid");
  EXPECT_EQ(options->sentinel_password, "sentinel-secret");
  EXPECT_EQ(redis_endpoints_text(*options), "sentinel:snowid@127.0.0.1:26379,[::1]:26380");

  const auto refused = [&](const std::vector<std::pair<std::string, std::string>>& given,
                           const std::vector<std::string>& named) {
    auto resolved = resolved_with(given);
    ASSERT_FALSE(resolved.ok()) << given.front().first;
    const std::string& message = resolved.error().message;
    EXPECT_EQ(message.find('\n'), std::string::npos) << message;
    for (const std::string& name : named) {
      EXPECT_NE(message.find(name), std::string::npos) << name << " in: " << message;
    }
  };
  refused({{"redis_sentinels", "127.0.0.1:26379"},
           {"redis_sentinel_master", "snowid"},
           {"redis_endpoints", "127.0.0.1:6380"}},
          {"redis_sentinels", "redis_endpoints"});
  refused({{"redis_sentinel_master", "snowid"}}, {"redis_sentinel_master", "redis_sentinels"});
  refused({{"redis_sentinel_password", "x"}}, {"redis_sentinel_password", "redis_sentinels"});
  refused({{"redis_sentinels", "127.0.0.1:26379"}}, {"redis_sentinel_master"});
  refused({{"redis_sentinels", "127.0.0.1:26379"},
           {"redis_sentinel_master", "snowid"},
           {"redis_sentinel_password", "x"},
           {"redis_sentinel_password_file", path}},
          {"redis_sentinel_password_file"});
  ServerConfig bad;
  ASSERT_TRUE(apply_option(bad, "coordinator", "redis", "t").ok());
  const Status unparsed = apply_option(bad, "redis_sentinels", "127.0.0.1", "t");
  ASSERT_FALSE(unparsed.ok());
  EXPECT_NE(unparsed.error().message.find("127.0.0.1"), std::string::npos)
      << unparsed.error().message;
  ServerConfig etcd;
  ASSERT_TRUE(apply_option(etcd, "coordinator", "etcd", "t").ok());
  ASSERT_TRUE(apply_option(etcd, "redis_sentinels", "127.0.0.1:26379", "t").ok());
  EXPECT_FALSE(validate(etcd).ok()) << "a Redis option outside coordinator = \"redis\"";
}

// snowidd --help gives every option a type and a one-line meaning, taken
// from snowid.example.toml at build time, and names no option that is not one.
TEST(ConfigOptions, EveryOptionHasHelpFromTheExampleConfig) {
  std::set<std::string> rows;
  for (const auto& [name, value] : describe(ServerConfig{})) {
    rows.insert(name);
    const OptionHelp* help = option_help(name);
    ASSERT_NE(help, nullptr) << name << " has no comment in snowid.example.toml";
    EXPECT_FALSE(help->type.empty()) << name;
    EXPECT_GE(help->meaning.size(), 10u) << name << ": " << help->meaning;
  }
  for (const OptionHelp& help : kOptionHelp) EXPECT_EQ(rows.count(std::string(help.name)), 1u);
  EXPECT_EQ(option_help("max_wait_ms")->type, "MILLISECONDS");
  EXPECT_EQ(option_help("http")->type, "ADDR:PORT");
  EXPECT_EQ(option_help("etcd_password_file")->type, "FILE");
  EXPECT_EQ(option_help("max_drift_ms")->meaning,
            "How far (ms) the monotonic policy may run ahead of the clock.");
}

// log_format = "json": a record is one line holding one JSON object, even
// when its message has quotes, newlines or bytes that are not UTF-8.
TEST(JsonLog, EachRecordIsOneParsableLine) {
  JsonLogFormatter formatter;
  const std::string text = "a \"quoted\" line\nand \xff\xfe bytes";
  const spdlog::details::log_msg msg(
      spdlog::log_clock::time_point{std::chrono::milliseconds{1505914988849}}, spdlog::source_loc{},
      "", spdlog::level::warn, text);
  spdlog::memory_buf_t out;
  formatter.format(msg, out);
  const std::string line(out.data(), out.size());
  ASSERT_EQ(line.find('\n'), line.size() - 1) << line;
  const auto record = nlohmann::json::parse(line, nullptr, false);
  ASSERT_TRUE(record.is_object()) << line;
  EXPECT_EQ(line.rfind("{\"time\":\"2017-09-20T13:43:08.849Z\",\"level\":\"warning\",", 0), 0u)
      << line;
  EXPECT_EQ(record.size(), 3u);
  EXPECT_EQ(record["message"], "a \"quoted\" line\nand \ufffd\ufffd bytes");
}

// A config path that is not a readable file is an error naming it, never
// an empty configuration with every option at its default.
TEST(ConfigOptions, ConfigPathThatIsNoFileIsRefused) {
  const std::string dir = ::testing::TempDir() + "/snowid-config-dir";
  std::filesystem::create_directories(dir);
  const std::string dangling = ::testing::TempDir() + "/snowid-config-dangling.toml";
  std::filesystem::remove(dangling);
  std::filesystem::create_symlink(dir + "/missing.toml", dangling);
  for (const auto& [path, words] : std::vector<std::pair<std::string, std::string>>{
           {dir, "a directory"},
           {dangling, "does not exist"},
           {dir + "/absent.toml", "no such file"},
       }) {
    ServerConfig config;
    Status read = apply_toml_file(config, path);
    ASSERT_FALSE(read.ok()) << path;
    EXPECT_NE(read.error().message.find(path), std::string::npos) << read.error().message;
    EXPECT_NE(read.error().message.find(words), std::string::npos) << read.error().message;
  }
  const std::string empty = ::testing::TempDir() + "/snowid-config-empty.toml";
  std::ofstream(empty, std::ios::trunc).flush();
  ServerConfig config;
  std::size_t applied = 99;
  EXPECT_TRUE(apply_toml_file(config, empty, &applied).ok());
  EXPECT_EQ(applied, 0u);
}

// Layouts that cannot issue an ID now are refused at start (item 10).
TEST(ConfigOptions, UnusableLayoutsAreRefused) {
  ServerConfig future;
  ASSERT_TRUE(apply_option(future, "epoch", "2999-01-01T00:00:00.000Z", "t").ok());
  ASSERT_FALSE(validate(future).ok());
  EXPECT_NE(validate(future).error().message.find("in the future"), std::string::npos);
  ServerConfig baidu;
  ASSERT_TRUE(apply_option(baidu, "preset", "baidu", "t").ok());
  ASSERT_FALSE(validate(baidu).ok());
  EXPECT_NE(validate(baidu).error().message.find("overflowed"), std::string::npos)
      << validate(baidu).error().message;
}

}  // namespace
}  // namespace snowid::server
