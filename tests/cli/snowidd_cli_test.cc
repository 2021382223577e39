// The real snowidd's command line and environment, as an operator meets
// them: --version, SNOWID_ variables (and Kubernetes' own beside them).
#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "server_process.h"
#include "subprocess.h"

namespace snowid {
namespace {

using test::ProcessResult;
using test::run_process;

// Bad input: exit 2, nothing on stdout, exactly one line on stderr.
void expect_usage_error(const ProcessResult& r, const std::string& says) {
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_NE(r.err.find(says), std::string::npos) << r.err;
}

// --version prints CMake's project version and exits 0 before reading any
// configuration (a bad option value after it does not matter).
TEST(SnowiddCli, VersionIsTheProjectVersion) {
  for (const auto& args :
       {std::vector<std::string>{SNOWIDD_PATH, "--version"},
        std::vector<std::string>{SNOWIDD_PATH, "--version", "--worker-id", "32"}}) {
    const ProcessResult r = run_process(args);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out, "snowid " SNOWID_PROJECT_VERSION "\n");
    EXPECT_EQ(r.err, "");
  }
}

// What Kubernetes gives every pod of a namespace with a Service named snowid
// (ports http 8080/TCP and grpc 9090/TCP).
const std::map<std::string, std::string> kServiceLinks = {
    {"SNOWID_SERVICE_HOST", "10.96.0.12"},       {"SNOWID_SERVICE_PORT", "8080"},
    {"SNOWID_SERVICE_PORT_HTTP", "8080"},        {"SNOWID_SERVICE_PORT_GRPC", "9090"},
    {"SNOWID_PORT", "tcp://10.96.0.12:8080"},    {"SNOWID_PORT_8080_TCP", "tcp://10.96.0.12:8080"},
    {"SNOWID_PORT_8080_TCP_PROTO", "tcp"},       {"SNOWID_PORT_8080_TCP_PORT", "8080"},
    {"SNOWID_PORT_8080_TCP_ADDR", "10.96.0.12"}, {"SNOWID_PORT_9090_TCP", "tcp://10.96.0.12:9090"},
    {"SNOWID_PORT_9090_TCP_PROTO", "tcp"},       {"SNOWID_PORT_9090_TCP_PORT", "9090"},
    {"SNOWID_PORT_9090_TCP_ADDR", "10.96.0.12"},
};

// A pod-like start: the service links beside real SNOWID_ options. snowidd
// serves, takes the options, and names the ignored variables in one log line.
TEST(SnowiddCli, KubernetesServiceLinksAreIgnoredAndLogged) {
  test::TempDir dir;
  std::map<std::string, std::string> env = kServiceLinks;
  env["SNOWID_WORKER_ID"] = "7";
  env["SNOWID_STATE_DIR"] = dir.file("state");
  test::ServerProcess server(SNOWIDD_PATH, {}, env);
  ASSERT_TRUE(server.started()) << server.log();
  const test::HttpReply info = test::http_get(server.port(), "/v1/info");
  EXPECT_EQ(info.status, 200) << info.body;
  EXPECT_NE(info.body.find("\"worker_id\":7"), std::string::npos) << info.body;
  const std::string log = server.log();
  std::string ignored_line;
  for (const std::string& line : test::split_lines(log)) {
    if (line.find("ignored environment variables") != std::string::npos) {
      EXPECT_EQ(ignored_line, "") << "more than one line names them:\n" << log;
      ignored_line = line;
    }
  }
  for (const auto& [name, value] : kServiceLinks) {
    const bool named = ignored_line.find(" " + name + ",") != std::string::npos ||
                       ignored_line.find(" " + name + ":") != std::string::npos;
    EXPECT_TRUE(named) << name << " is not named:\n" << log;
  }
  EXPECT_EQ(ignored_line.find("SNOWID_WORKER_ID"), std::string::npos) << ignored_line;
  server.signal(SIGTERM);
  EXPECT_EQ(server.wait(), 0) << server.log();
}

// Beside the service links, a misspelt option still stops the start: one
// line naming it, exit 2.
TEST(SnowiddCli, MisspeltOptionBesideServiceLinksIsRefused) {
  test::TempDir dir;
  std::map<std::string, std::string> env = kServiceLinks;
  env["SNOWID_HTTPP"] = "127.0.0.1:0";
  env["SNOWID_STATE_DIR"] = dir.file("state");
  expect_usage_error(
      run_process({SNOWIDD_PATH, "--http", "127.0.0.1:0", "--grpc", "127.0.0.1:0"}, env),
      "environment variable SNOWID_HTTPP: unknown option 'httpp'");
}

// A store's password from a file, as a flag, a SNOWID_ variable or in the
// config file: accepted and never shown; a file that is missing or empty,
// or the password given both ways, is one line and exit 2.
TEST(SnowiddCli, PasswordFilesInEveryFormAndTheirErrors) {
  test::TempDir dir;
  const std::string secret = dir.file("password");
  const std::string empty = dir.file("empty");
  { std::ofstream(secret) << "s3cret-from-file\n"; }
  { std::ofstream(empty) << "\n"; }
  const std::string config = dir.file("snowid.toml");
  {
    std::ofstream(config) << "coordinator = \"zookeeper\"\nzookeeper_password_file = \"" << secret
                          << "\"\n";
  }
  const std::vector<std::string> check{SNOWIDD_PATH, "--check-config"};
  auto with = [&](std::vector<std::string> args) {
    args.insert(args.begin(), check.begin(), check.end());
    return args;
  };
  for (const ProcessResult& r :
       {run_process(with({"--coordinator", "etcd", "--etcd-password-file", secret})),
        run_process(with({"--coordinator", "redis"}), {{"SNOWID_REDIS_PASSWORD_FILE", secret}}),
        run_process(with({"--config", config}))}) {
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("_password_file = \"" + secret + "\""), std::string::npos) << r.out;
    EXPECT_EQ(r.out.find("s3cret-from-file"), std::string::npos) << r.out;
  }
  expect_usage_error(
      run_process(with({"--coordinator", "etcd", "--etcd-password-file", dir.file("missing")})),
      "etcd_password_file");
  expect_usage_error(
      run_process(with({"--coordinator", "redis"}), {{"SNOWID_REDIS_PASSWORD_FILE", empty}}),
      "redis_password_file");
  expect_usage_error(run_process(with({"--coordinator", "zookeeper", "--zookeeper-password", "flag",
                                       "--zookeeper-password-file", secret})),
                     "zookeeper_password and zookeeper_password_file are both set");
}

// grpc = "off" from the flag, the file or the environment: --check-config
// shows it; a value that is neither ADDR:PORT nor "off", or a connection
// limit while it is off, is one line and exit 2.
TEST(SnowiddCli, GrpcOffAndItsBadValues) {
  test::TempDir dir;
  const std::string config = dir.file("snowid.toml");
  { std::ofstream(config) << "grpc = \"off\"\n"; }
  for (const ProcessResult& r :
       {run_process({SNOWIDD_PATH, "--check-config", "--grpc", "off"}),
        run_process({SNOWIDD_PATH, "--check-config", "--config", config}),
        run_process({SNOWIDD_PATH, "--check-config"}, {{"SNOWID_GRPC", "off"}})}) {
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("\ngrpc = \"off\"\n"), std::string::npos) << r.out;
  }
  const ProcessResult on = run_process({SNOWIDD_PATH, "--check-config"});
  EXPECT_NE(on.out.find("\ngrpc = \"127.0.0.1:9090\"\n"), std::string::npos) << on.out;

  expect_usage_error(run_process({SNOWIDD_PATH, "--check-config", "--grpc", "none"}),
                     "grpc: 'none' is not ADDR:PORT");
  expect_usage_error(run_process({SNOWIDD_PATH, "--check-config"}, {{"SNOWID_GRPC", "Off"}}),
                     "SNOWID_GRPC");
  expect_usage_error(run_process({SNOWIDD_PATH, "--check-config", "--grpc", "off",
                                  "--grpc-max-connections", "10"}),
                     "grpc_max_connections");
}

// snowidd --help: every option's entry has a type and a meaning before its
// default, not the bare "TEXT" and "Option NAME".
TEST(SnowiddCli, HelpGivesEveryOptionATypeAndAMeaning) {
  const ProcessResult r = run_process({SNOWIDD_PATH, "--help"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // One entry per option: its first line starts with "  -"; a description
  // too long for the column continues on the next line.
  std::vector<std::string> entries;
  for (const std::string& line : test::split_lines(r.out)) {
    if (line.rfind("  -", 0) == 0) {
      entries.push_back(line);
    } else if (!entries.empty() && line.rfind("    ", 0) == 0) {
      entries.back() += " " + line;
    }
  }
  static const std::regex kEntry(R"(^  --([a-z-]+) ([A-Z:,.]+) +(\S.*\S) \(default: .*\)$)");
  int options = 0;
  for (const std::string& entry : entries) {
    if (entry.find("(default: ") == std::string::npos) continue;  // --help, --version, ...
    ++options;
    std::smatch m;
    ASSERT_TRUE(std::regex_match(entry, m, kEntry)) << entry;
    EXPECT_EQ(m[3].str().find("Option "), std::string::npos) << entry;
    EXPECT_GE(m[3].length(), 10) << entry;
  }
  EXPECT_GE(options, 70) << r.out;
  EXPECT_NE(r.out.find("--max-drift-ms MILLISECONDS"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("How far (ms) the monotonic policy may run ahead of the clock. "
                       "(default: 1000)"),
            std::string::npos)
      << r.out;
}

// log_format = "json": every line snowidd logs, from the start to the stop,
// is one JSON object with time, level and message; a bad format is refused.
TEST(SnowiddCli, JsonLogLinesEachParse) {
  test::TempDir dir;
  std::map<std::string, std::string> env = kServiceLinks;  // logged as ignored
  env["SNOWID_LOG_FORMAT"] = "json";
  test::ServerProcess server(SNOWIDD_PATH, {"--state-dir", dir.file("state")}, env);
  ASSERT_TRUE(server.started()) << server.log();
  EXPECT_EQ(test::http_get(server.port(), "/v1/id").status, 200);
  server.signal(SIGTERM);
  EXPECT_EQ(server.wait(), 0) << server.log();
  const std::vector<std::string> lines = test::split_lines(server.log());
  ASSERT_GE(lines.size(), 3u) << server.log();
  static const std::regex kTime(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z)");
  static const std::set<std::string> kLevels = {"trace",   "debug", "info",
                                                "warning", "error", "critical"};
  std::vector<std::string> messages;
  for (const std::string& line : lines) {
    const auto record = nlohmann::json::parse(line, nullptr, false);
    ASSERT_TRUE(record.is_object()) << line;
    ASSERT_EQ(record.size(), 3u) << line;
    ASSERT_TRUE(record["time"].is_string() && record["level"].is_string() &&
                record["message"].is_string())
        << line;
    EXPECT_TRUE(std::regex_match(record["time"].get<std::string>(), kTime)) << line;
    EXPECT_TRUE(kLevels.count(record["level"].get<std::string>()) == 1) << line;
    messages.push_back(record["message"].get<std::string>());
  }
  for (const char* start :
       {"ignored environment variables SNOWID_",
        "snowidd " SNOWID_PROJECT_VERSION " starting: ", "stopped: 1 IDs issued"}) {
    EXPECT_EQ(std::count_if(messages.begin(), messages.end(),
                            [&](const std::string& m) { return m.rfind(start, 0) == 0; }),
              1)
        << start << "\n"
        << server.log();
  }
  expect_usage_error(run_process({SNOWIDD_PATH, "--log-format", "xml", "--check-config"}),
                     "unknown log format 'xml'; expected text or json");
}

// A key file that is missing, not a file, or holds too short a key stops
// the start and --check-config alike: one line naming the option and the
// file, exit 2, the key's bytes nowhere.
TEST(SnowiddCli, ABadOpaqueKeyFileStopsTheStart) {
  test::TempDir dir;
  const std::string short_key = dir.file("short.key");
  std::ofstream(short_key) << "tooshort-secret\n";  // 15 bytes
  struct Case {
    std::string path;
    std::string says;
  };
  for (const Case& c :
       {Case{short_key, "at least 16"}, Case{dir.file("absent.key"), "not a readable"},
        Case{dir.path(), "not a readable"}}) {
    for (const bool check_config : {false, true}) {
      std::vector<std::string> argv = {
          SNOWIDD_PATH, "--opaque-key-file", c.path,   "--state-dir", dir.file("state"),
          "--http",     "127.0.0.1:0",       "--grpc", "127.0.0.1:0"};
      if (check_config) argv.push_back("--check-config");
      const ProcessResult r = run_process(argv, {}, std::chrono::seconds{10});
      EXPECT_FALSE(r.timed_out) << "snowidd ran with a bad key file";
      expect_usage_error(r, "snowidd: opaque_key_file " + c.path + ": ");
      EXPECT_NE(r.err.find(c.says), std::string::npos) << r.err;
      EXPECT_EQ(r.err.find("tooshort-secret"), std::string::npos) << r.err;
    }
  }
}

}  // namespace
}  // namespace snowid
