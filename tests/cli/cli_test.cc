// The real `snowid` binary, run as a user would.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "faketime.h"
#include "missing.h"
#include "snowid/decode.h"
#include "snowid/generator.h"
#include "subprocess.h"

namespace snowid {
namespace {

using test::ProcessResult;
using test::run_process;
using test::split_lines;

ProcessResult snowid_cli(std::vector<std::string> args,
                         const std::map<std::string, std::string>& env = {}) {
  args.insert(args.begin(), SNOWID_CLI_PATH);
  return run_process(args, env);
}

// Bad input: exit 2, nothing on stdout, exactly one line on stderr.
void expect_usage_error(const std::vector<std::string>& args, const std::string& says = "") {
  const ProcessResult r = snowid_cli(args);
  std::string joined;
  for (const auto& a : args) joined += a + " ";
  EXPECT_EQ(r.exit_code, 2) << joined << r.err;
  EXPECT_EQ(r.out, "") << joined;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << joined << r.err;
  EXPECT_NE(r.err.find(says), std::string::npos) << joined << r.err;
}

// --version prints CMake's project version, with or without a subcommand after it.
TEST(Cli, VersionIsTheProjectVersion) {
  for (const auto& args :
       {std::vector<std::string>{"--version"}, std::vector<std::string>{"--version", "gen"}}) {
    const ProcessResult r = snowid_cli(args);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out, "snowid " SNOWID_PROJECT_VERSION "\n");
    EXPECT_EQ(r.err, "");
  }
}

TEST(Cli, ComposeKnownAnswer) {
  const ProcessResult r = snowid_cli({"compose", "--timestamp-ms", "1505914988849",
                                      "--datacenter", "17", "--worker", "25", "--sequence", "0"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "910499571847892992\n");
}

TEST(Cli, DecodeJsonGivesTheFieldsBack) {
  const ProcessResult r = snowid_cli({"decode", "--json", "910499571847892992"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto json = nlohmann::json::parse(r.out);
  EXPECT_EQ(json["id"], "910499571847892992");
  EXPECT_EQ(json["timestamp_ms"], 1505914988849);
  EXPECT_EQ(json["time"], "2017-09-20T13:43:08.849Z");
  EXPECT_EQ(json["datacenter"], 17);
  EXPECT_EQ(json["worker"], 25);
  EXPECT_EQ(json["sequence"], 0);
}

TEST(Cli, DecodeTextAndSeveralIds) {
  const ProcessResult r = snowid_cli({"decode", "910499571847892992", "0"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto lines = split_lines(r.out);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_NE(lines[0].find("datacenter=17 worker=25 sequence=0"), std::string::npos);
}

TEST(Cli, LayoutOf73BitsIsRefusedNamingTheTotal) {
  expect_usage_error({"layout", "--timestamp-bits", "37", "--datacenter-bits", "0",
                      "--worker-bits", "20", "--sequence-bits", "16"},
                     "73 bits");
}

TEST(Cli, LayoutJsonHasDerivedFacts) {
  const ProcessResult r = snowid_cli({"layout", "--json", "--preset", "sonyflake"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto json = nlohmann::json::parse(r.out);
  EXPECT_EQ(json["timestamp_bits"], 39);
  EXPECT_EQ(json["sequence_position"], "high");
  EXPECT_EQ(json["ids_per_unit"], 256);
  EXPECT_EQ(json["max_worker_id"], 65535);
  EXPECT_TRUE(json["warning"].is_null());
}

TEST(Cli, LayoutTextDrawsTheFields) {
  const ProcessResult r = snowid_cli({"layout"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("| 62..22"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("sequence (12)"), std::string::npos);
  EXPECT_NE(r.out.find("4096000"), std::string::npos);
}

TEST(Cli, LayoutWarnsAboutAnExpiredLayout) {
  const ProcessResult r = snowid_cli({"layout", "--preset", "baidu"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("warning: the timestamp field overflowed on 2024-11-20"),
            std::string::npos);
}

// An ID made the way Baidu's uid-generator (DefaultUidGenerator) makes it on
// a JVM whose default zone is Asia/Shanghai: epochStr "2016-05-20" parsed in
// that zone (DateUtils.parseByDayPattern), so epochSeconds is
// 2016-05-19T16:00:00Z = 1463673600; at 2024-01-01T00:00:00Z (1704067200)
// with worker 12345 and sequence 77 the ID is
// (1704067200 - 1463673600) << (22 + 13) | 12345 << 13 | 77.
TEST(Cli, EpochZoneDecodesUidGeneratorIdsFromAJvmInShanghai) {
  constexpr std::int64_t kDeltaSeconds = 1704067200 - 1463673600;
  constexpr std::int64_t kId = kDeltaSeconds << 35 | std::int64_t{12345} << 13 | 77;
  const ProcessResult zoned = snowid_cli(
      {"decode", "--json", "--preset", "baidu", "--epoch-zone", "Asia/Shanghai",
       std::to_string(kId)});
  ASSERT_EQ(zoned.exit_code, 0) << zoned.err;
  const auto json = nlohmann::json::parse(zoned.out);
  EXPECT_EQ(json["time"], "2024-01-01T00:00:00.000Z");
  EXPECT_EQ(json["timestamp_ms"], 1704067200000);
  EXPECT_EQ(json["worker"], 12345);
  EXPECT_EQ(json["sequence"], 77);
  // The preset alone reads the epoch in UTC: eight hours late.
  const ProcessResult utc =
      snowid_cli({"decode", "--json", "--preset", "baidu", std::to_string(kId)});
  EXPECT_EQ(nlohmann::json::parse(utc.out)["time"], "2024-01-01T08:00:00.000Z");
  // An --epoch without a zone moves too; the layout shows the moment in UTC.
  const ProcessResult layout = snowid_cli({"layout", "--json", "--preset", "baidu", "--epoch",
                                           "2016-05-20", "--epoch-zone", "Asia/Shanghai"});
  ASSERT_EQ(layout.exit_code, 0) << layout.err;
  EXPECT_EQ(nlohmann::json::parse(layout.out)["epoch"], "2016-05-19T16:00:00.000Z");
  expect_usage_error({"decode", "--epoch-zone", "Mars/Olympus_Mons", "1"}, "unknown time zone");
  expect_usage_error({"decode", "--epoch-zone", "../../etc/passwd", "1"}, "unknown time zone");
  expect_usage_error({"decode", "--epoch", "2016-05-20T00:00:00Z", "--epoch-zone",
                      "Asia/Shanghai", "1"},
                     "names its own zone");
}

TEST(Cli, BadInputIsOneLineAndExitTwo) {
  expect_usage_error({"decode", "abc"}, "not a decimal number");
  expect_usage_error({"decode", "--", "-1"}, "negative");
  expect_usage_error({"decode", "9223372036854775808"}, "2^63-1");
  expect_usage_error({"decode", "1", "x"}, "not a decimal number");
  expect_usage_error({"compose", "--timestamp-ms", "1505914988849", "--datacenter", "32"},
                     "out of range 0..31");
  expect_usage_error({"compose", "--timestamp-ms", "soon"}, "ISO 8601");
  expect_usage_error({"gen", "-n", "ten"}, "not a decimal number");
  expect_usage_error({"gen", "--worker-id", "32"}, "out of range");
  expect_usage_error({"gen", "--clock-policy", "sometimes"}, "unknown clock policy");
  expect_usage_error({"layout", "--preset", "flake"}, "unknown preset");
  expect_usage_error({"layout", "--time-unit-ms", "0"}, "time unit");
  expect_usage_error({"layout", "--epoch", "2014-02-30"}, "no such date");
  expect_usage_error({"frobnicate"});
  expect_usage_error({});
}

TEST(Cli, GenFiveMillionDistinctIncreasing) {
  const ProcessResult r = snowid_cli({"gen", "-n", "5000000"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto lines = split_lines(r.out);
  ASSERT_EQ(lines.size(), 5'000'000u);
  Id previous = -1;
  for (const auto& line : lines) {
    auto id = parse_id(line);
    ASSERT_TRUE(id.ok()) << line;
    ASSERT_GT(*id, previous);
    previous = *id;
  }
}

// A million of each kind from one run: distinct, and strictly increasing as
// text (each kind's text sorts as its bytes).
TEST(Cli, GenAMillionOfEachFormattedKind) {
  const std::vector<std::pair<std::string, std::size_t>> kinds{
      {"uuid7", 36}, {"ulid", 26}, {"objectid", 24}};
  for (const auto& [kind, length] : kinds) {
    const ProcessResult r = snowid_cli({"gen", "--kind", kind, "-n", "1000000"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const auto lines = split_lines(r.out);
    ASSERT_EQ(lines.size(), 1'000'000u) << kind;
    for (std::size_t i = 0; i < lines.size(); ++i) {
      ASSERT_EQ(lines[i].size(), length) << kind << ": " << lines[i];
      if (i > 0) {
        ASSERT_LT(lines[i - 1], lines[i]) << kind << " at line " << i;
      }
    }
  }
  expect_usage_error({"gen", "--kind", "uuid4"}, "expected uuid7, ulid or objectid");
}

// With a state file, a second run whose clock is 10 s behind (libfaketime)
// continues above the first run's IDs: the first run wrote its exact mark
// at exit, and the monotonic policy with a max_drift of 15 s starts the
// second run above it.
TEST(Cli, GenFormattedKindsWithAStateFileStayAboveAcrossRunsWithTheClockBehind) {
  test::TempDir dir;
  const std::string state = dir.file("gen.state");
  const auto behind = test::faketime_fixed_env(std::chrono::milliseconds{-10'000});
  if (behind.empty()) SNOWID_SKIP_MISSING(test::kFaketimeMissing);
  for (const std::string kind : {"uuid7", "ulid", "objectid"}) {
    const ProcessResult first =
        snowid_cli({"gen", "--kind", kind, "-n", "1000", "--state-file", state});
    ASSERT_EQ(first.exit_code, 0) << first.err;
    const ProcessResult second = snowid_cli(
        {"gen", "--kind", kind, "-n", "1000", "--state-file", state, "--max-drift-ms", "15000"},
        behind);
    ASSERT_EQ(second.exit_code, 0) << second.err;
    const auto before = split_lines(first.out);
    const auto after = split_lines(second.out);
    ASSERT_EQ(after.size(), 1000u);
    EXPECT_LT(before.back(), after.front()) << kind;
  }
}

TEST(Cli, DecodeRecognisesEachShape) {
  const ProcessResult r =
      snowid_cli({"decode", "017F22E2-79B0-7CC3-98C4-DC0C0C07398F", "01ARYZ6S41TSV4RRFFQ69G5FAV",
                  "507f1f77bcf86cd799439011", "910499571847892992"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto lines = split_lines(r.out);
  ASSERT_EQ(lines.size(), 4u);
  EXPECT_NE(lines[0].find("kind=uuid time=2022-02-22T19:22:22.000Z timestamp_ms=1645557742000 "
                          "variant=rfc9562 version=7"),
            std::string::npos)
      << lines[0];
  EXPECT_NE(lines[1].find("timestamp_ms=1469918176385"), std::string::npos) << lines[1];
  EXPECT_NE(lines[2].find("process_random=bcf86cd799 time=2012-10-17T21:13:27.000Z"),
            std::string::npos)
      << lines[2];
  EXPECT_NE(lines[3].find("datacenter=17 worker=25"), std::string::npos) << lines[3];
  expect_usage_error({"decode", "01ARYZ6S41TSV4RRFFQ69G5FAU"}, "not a ULID");
}

TEST(Cli, GenUsesNodeIdsAndPresets) {
  const ProcessResult r =
      snowid_cli({"gen", "-n", "3", "--preset", "sonyflake", "--worker-id", "513"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const auto& line : split_lines(r.out)) {
    const auto decoded = snowid_cli({"decode", "--json", "--preset", "sonyflake", line});
    EXPECT_EQ(nlohmann::json::parse(decoded.out)["worker"], 513);
  }
}

// The node id MyBatis-Plus and Hutool derive from MAC and pid: shown on
// request, used by `gen` only when asked, always with a warning.
TEST(Cli, NodeIdFromMacAndPid) {
  const ProcessResult shown = snowid_cli({"node-id", "mac-pid", "--pid", "1234", "--json"});
  ASSERT_EQ(shown.exit_code, 0) << shown.err;
  const auto json = nlohmann::json::parse(shown.out);
  EXPECT_EQ(json["pid"], 1234);
  EXPECT_LE(json["datacenter_id"].get<int>(), 31);
  EXPECT_EQ(json["node_id"].get<int>(),
            json["datacenter_id"].get<int>() * 32 + json["worker_id"].get<int>());
  EXPECT_NEAR(json["collision_odds_on_separate_machines"].get<double>(), 0.043, 0.001);

  const ProcessResult generated = snowid_cli({"gen", "-n", "3", "--node-id-from", "mac-pid"});
  ASSERT_EQ(generated.exit_code, 0) << generated.err;
  EXPECT_EQ(split_lines(generated.out).size(), 3u);
  EXPECT_EQ(split_lines(generated.err).size(), 1u) << generated.err;
  EXPECT_NE(generated.err.find("can derive the same pair"), std::string::npos) << generated.err;

  expect_usage_error({"gen", "--node-id-from", "mac-pid", "--worker-id", "3"},
                     "do not also give --worker-id");
  expect_usage_error({"gen", "--node-id-from", "hostname"}, "the only source is mac-pid");
  expect_usage_error({"node-id", "mac-pid", "--pid", "x"}, "--pid");
  expect_usage_error({"node-id", "mac-pid", "--interface", "no-such-interface0"},
                     "no network interface");
  expect_usage_error({"node-id"});
}

TEST(Cli, GenWithExpiredOrFutureLayoutIsBadInput) {
  expect_usage_error({"gen", "--preset", "baidu"}, "overflowed on 2024-11-20");
  expect_usage_error({"gen", "--epoch", "2099-01-01"}, "lies in the future");
  expect_usage_error({"layout", "--epoch", "9223372036854775807"}, "year 9999");
  expect_usage_error({"layout", "--timestamp-bits", "36", "--time-unit-ms", "86400000",
                      "--datacenter-bits", "0", "--worker-bits", "0"},
                     "year 9999");
}

TEST(Cli, LongTimeUnitsGenerate) {
  const ProcessResult r =
      snowid_cli({"gen", "-n", "3", "--time-unit-ms", "5000", "--timestamp-bits", "30"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(split_lines(r.out).size(), 3u);
}

TEST(Cli, WriteErrorIsReportedNotCrashed) {
  if (!std::filesystem::exists("/dev/full")) SNOWID_SKIP_MISSING("no /dev/full");
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"gen", "-n", "3"}, std::vector<std::string>{"decode", "1"}}) {
    std::string command = std::string(SNOWID_CLI_PATH);
    for (const auto& a : args) command += " " + a;
    const ProcessResult r = run_process({"/bin/sh", "-c", command + " > /dev/full"});
    EXPECT_EQ(r.exit_code, 1) << command << ": " << r.err;
    EXPECT_NE(r.err.find("cannot write output"), std::string::npos) << r.err;
  }
}

// Restarts with the clock set back by libfaketime: the state file keeps every
// run's IDs above the previous run's.
TEST(Cli, StateFileSurvivesRestartsWithTheClockSetBack) {
  const std::string faketime = test::faketime_library();
  if (faketime.empty()) SNOWID_SKIP_MISSING(test::kFaketimeMissing);
  test::TempDir dir;
  const std::string state = dir.file("gen.state");
  auto gen = [&](const std::string& offset, const std::string& policy) {
    std::map<std::string, std::string> env;
    // ASAN_OPTIONS: under AddressSanitizer, libfaketime is preloaded ahead of its runtime.
    if (!offset.empty()) {
      env = {{"LD_PRELOAD", faketime}, {"FAKETIME", offset},
             {"ASAN_OPTIONS", "verify_asan_link_order=0"}};
    }
    return snowid_cli({"gen", "-n", "20000", "--state-file", state, "--clock-policy", policy,
                       "--max-drift-ms", "600000"},
                      env);
  };
  const ProcessResult first = gen("", "reject");
  ASSERT_EQ(first.exit_code, 0) << first.err;
  const Id first_max = *parse_id(split_lines(first.out).back());

  const ProcessResult refused = gen("-60s", "reject");
  EXPECT_EQ(refused.exit_code, 1);
  EXPECT_NE(refused.err.find("behind the high-water mark"), std::string::npos) << refused.err;
  EXPECT_EQ(refused.out, "");

  const ProcessResult continued = gen("-60s", "monotonic");
  ASSERT_EQ(continued.exit_code, 0) << continued.err;
  const auto lines = split_lines(continued.out);
  ASSERT_EQ(lines.size(), 20000u);
  EXPECT_GT(*parse_id(lines.front()), first_max);
}

TEST(Cli, StateFileInUseByAnotherProcessIsRefused) {
  test::TempDir dir;
  const std::string state = dir.file("held.state");
  GeneratorOptions options;
  options.state_file = state;
  auto holder = Generator::create(options);
  ASSERT_TRUE(holder.ok()) << holder.error().message;
  const ProcessResult r = snowid_cli({"gen", "-n", "1", "--state-file", state});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out, "");
  EXPECT_NE(r.err.find("in use by another process"), std::string::npos) << r.err;
}

// `snowid encode` writes fixed-width text; `snowid decode --encoding` reads
// it back, and decoding by shape is unchanged without the flag.
TEST(Cli, EncodeAndDecodeFixedWidthText) {
  const std::vector<std::pair<std::string, std::string>> texts = {{"hex", "0ca2be895c239000"},
                                                                  {"base32", "0S8NYH5E27400"},
                                                                  {"base58", "37amtpPtjf5"},
                                                                  {"base62", "15G63YLn9Ae"}};
  for (const auto& [encoding, text] : texts) {
    const ProcessResult encoded =
        snowid_cli({"encode", "--encoding", encoding, "910499571847892992", "0"});
    ASSERT_EQ(encoded.exit_code, 0) << encoded.err;
    const auto lines = split_lines(encoded.out);
    ASSERT_EQ(lines.size(), 2u);
    EXPECT_EQ(lines[0], text) << encoding;
    EXPECT_EQ(lines[1].size(), text.size());
    const ProcessResult decoded = snowid_cli({"decode", "--json", "--encoding", encoding, text});
    ASSERT_EQ(decoded.exit_code, 0) << decoded.err;
    EXPECT_EQ(nlohmann::json::parse(decoded.out)["id"], "910499571847892992");
  }
  EXPECT_EQ(snowid_cli({"decode", "--json", "910499571847892992"}).exit_code, 0);
  expect_usage_error({"encode", "--encoding", "base64", "1"}, "unknown encoding 'base64'");
  expect_usage_error({"encode", "--encoding", "hex", "-1"}, "ID");
  expect_usage_error({"encode", "1"}, "--encoding");
  expect_usage_error({"decode", "--encoding", "base58", "0OIl"}, "expected 11");
  expect_usage_error({"decode", "--encoding", "hex", "8000000000000000"}, "exceeds 2^63-1");
}

// `snowid opaque encode|decode` map IDs both ways under a key file's key,
// in any encoding; the key is never printed, a bad one is one line, exit 2.
TEST(Cli, OpaqueEncodeAndDecodeRoundTrip) {
  test::TempDir dir;
  const std::string key = dir.file("key");
  std::ofstream(key) << "0123456789abcdef0123456789abcdef\n";
  // Pinned as in the unit test's known answers (the final newline is no part of the key).
  const ProcessResult encoded =
      snowid_cli({"opaque", "encode", "0", "1", "9223372036854775807", "--key-file", key});
  ASSERT_EQ(encoded.exit_code, 0) << encoded.err;
  EXPECT_EQ(encoded.out, "7313480103438861701\n3296229837112722839\n556728859117939757\n");
  const ProcessResult decoded = snowid_cli(
      {"opaque", "decode", "7313480103438861701", "556728859117939757", "--key-file", key});
  ASSERT_EQ(decoded.exit_code, 0) << decoded.err;
  EXPECT_EQ(decoded.out, "0\n9223372036854775807\n");
  for (const std::string encoding : {"hex", "base32", "base58", "base62"}) {
    const ProcessResult text = snowid_cli(
        {"opaque", "encode", "910499571847892992", "--key-file", key, "--encoding", encoding});
    ASSERT_EQ(text.exit_code, 0) << text.err;
    const std::string opaque = split_lines(text.out).at(0);
    const ProcessResult back =
        snowid_cli({"opaque", "decode", opaque, "--key-file", key, "--encoding", encoding});
    ASSERT_EQ(back.exit_code, 0) << back.err;
    EXPECT_EQ(back.out, "910499571847892992\n") << encoding;
  }
  const std::string short_key = dir.file("short");
  std::ofstream(short_key) << "secret-15-bytes\n";
  expect_usage_error({"opaque", "encode", "1", "--key-file", short_key}, "at least 16");
  const ProcessResult refused = snowid_cli({"opaque", "encode", "1", "--key-file", short_key});
  EXPECT_EQ(refused.err.find("secret-15-bytes"), std::string::npos) << refused.err;
  expect_usage_error({"opaque", "encode", "1", "--key-file", dir.file("absent")},
                     "not a readable file");
  expect_usage_error({"opaque", "encode", "1"}, "--key-file");
  expect_usage_error({"opaque", "decode", "zz", "--key-file", key, "--encoding", "hex"},
                     "expected 16");
  expect_usage_error({"opaque", "encode", "abc", "--key-file", key}, "ID");
}

}  // namespace
}  // namespace snowid
