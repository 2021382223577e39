// `snowid check`, the real binary: planted findings fail with a report,
// clean lists pass, audit coverage, standard input, JSON, bad input.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>

#include "snowid/decode.h"
#include "subprocess.h"

namespace snowid {
namespace {

using test::ProcessResult;
using test::run_process;
using test::split_lines;

ProcessResult snowid_cli(std::vector<std::string> args) {
  args.insert(args.begin(), SNOWID_CLI_PATH);
  return run_process(args);
}

void write_file(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

std::string join_lines(const std::vector<std::string>& lines) {
  std::string out;
  for (const auto& line : lines) out += line + "\n";
  return out;
}

// `n` fresh IDs from `snowid gen`, one per element.
std::vector<std::string> generate(int n) {
  const ProcessResult r = snowid_cli({"gen", "-n", std::to_string(n)});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return split_lines(r.out);
}

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

class CheckCli : public ::testing::Test {
 protected:
  test::TempDir dir;
  std::string file(const std::string& name, const std::string& text) {
    write_file(dir.file(name), text);
    return dir.file(name);
  }
};

TEST_F(CheckCli, AGeneratedListPasses) {
  const ProcessResult gen = run_process(
      {"/bin/sh", "-c", std::string(SNOWID_CLI_PATH) + " gen -n 300000 > " + dir.file("ids")});
  ASSERT_EQ(gen.exit_code, 0) << gen.err;
  const ProcessResult r = snowid_cli({"check", dir.file("ids")});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_TRUE(has(r.out, "checked 300000 IDs from 1 source")) << r.out;
  EXPECT_TRUE(has(r.out, "duplicates        0")) << r.out;
  EXPECT_TRUE(has(r.out, "result            OK")) << r.out;
  EXPECT_EQ(r.err, "");
}

TEST_F(CheckCli, APlantedDuplicateFailsAndIsNamed) {
  const auto ids = generate(1000);
  const std::string a = file("a", join_lines(ids));
  const std::string b = file("b", ids[500] + "\n");  // another client got it too
  const ProcessResult r = snowid_cli({"check", a, b});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_TRUE(has(r.out, "duplicates        1 (1 distinct IDs)")) << r.out;
  EXPECT_TRUE(has(r.out, "  " + ids[500] + " (")) << r.out;
  EXPECT_TRUE(has(r.out, "seen 2 times")) << r.out;
  EXPECT_TRUE(has(r.out, "order violations  0")) << r.out;
  EXPECT_TRUE(has(r.out, "result            FAILED: 1 duplicate\n")) << r.out;
}

TEST_F(CheckCli, APlantedOrderViolationFailsWithItsLine) {
  auto ids = generate(1000);
  std::swap(ids[700], ids[701]);
  const std::string path = file("ids", join_lines(ids));
  const ProcessResult r = snowid_cli({"check", path});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_TRUE(has(r.out, "order violations  1")) << r.out;
  EXPECT_TRUE(has(r.out, path + ":702 (source " + path + "): " + ids[701] + " after " + ids[700]))
      << r.out;
  EXPECT_TRUE(has(r.out, "duplicates        0")) << r.out;
  EXPECT_TRUE(has(r.out, "FAILED: 1 order violation")) << r.out;
}

TEST_F(CheckCli, SourcesNamedInOneStreamAreCheckedApart) {
  const auto a = generate(3);
  const auto b = generate(3);
  std::string text;
  for (std::size_t i = 0; i < 3; ++i) text += "b\t" + b[i] + "\na\t" + a[i] + "\n";
  ProcessResult r = snowid_cli({"check", file("mixed", text)});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_TRUE(has(r.out, "from 2 sources")) << r.out;
  EXPECT_TRUE(has(r.out, "  b: 3 IDs, 0 order violations")) << r.out;
  r = snowid_cli({"check", file("back", text + "a\t" + a[0] + "\n")});
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_TRUE(has(r.out, "(source a): " + a[0] + " after " + a[2])) << r.out;
}

TEST_F(CheckCli, ReadsStandardInput) {
  const std::string path = file("ids", join_lines(generate(2000)));
  const std::string cli = SNOWID_CLI_PATH;
  for (const std::string& command :
       {cli + " check < " + path, "cat " + path + " | " + cli + " check -"}) {
    const ProcessResult r = run_process({"/bin/sh", "-c", command});
    EXPECT_EQ(r.exit_code, 0) << command << r.out << r.err;
    EXPECT_TRUE(has(r.out, "checked 2000 IDs from 1 source")) << r.out;
  }
  const ProcessResult dup =
      run_process({"/bin/sh", "-c", "cat " + path + " " + path + " | " + cli + " check"});
  EXPECT_EQ(dup.exit_code, 1);
  EXPECT_TRUE(has(dup.out, "duplicates        2000")) << dup.out;
}

TEST_F(CheckCli, FutureTimestampsBeyondTheDriftFail) {
  // IDs composed 5 s after the given "now".
  const ProcessResult composed =
      snowid_cli({"compose", "--timestamp-ms", "2026-01-01T00:00:05Z", "--worker", "3"});
  ASSERT_EQ(composed.exit_code, 0) << composed.err;
  const std::string path = file("ids", composed.out);
  const std::string id = split_lines(composed.out).at(0);
  ProcessResult r = snowid_cli({"check", path, "--now", "2026-01-01T00:00:00Z"});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_TRUE(has(r.out, "future IDs        1 (later than now + 1000 ms)")) << r.out;
  EXPECT_TRUE(has(r.out, path + ":1: " + id + " (2026-01-01T00:00:05.000Z, node 0/3")) << r.out;
  r = snowid_cli({"check", path, "--now", "2026-01-01T00:00:00Z", "--max-drift", "10s"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  // The present by default: an ID from 2026-01-01 is long past.
  EXPECT_EQ(snowid_cli({"check", path}).exit_code, 0);
}

TEST_F(CheckCli, IdsMissingFromTheAuditLogFail) {
  const auto ids = generate(10);
  const std::string path = file("ids", join_lines(ids));
  const std::string header =
      "# snowid-audit v1 incarnation=00000000000000aa started=2026-01-01T00:00:00.000Z pid=1 "
      "node=0/0 layout=41/5/5/12 unit=1ms epoch=2010-11-04T01:42:54.657Z seq=low\n";
  const std::string partial =
      file("partial.log", header + "00000000000000aa 0/0 " + ids[0] + " " + ids[8] + "\n");
  ProcessResult r = snowid_cli({"check", "--audit", partial, path});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_TRUE(has(r.out, "audit             1 file, 1 incarnation, 1 record (0 torn, dropped)"))
      << r.out;
  EXPECT_TRUE(has(r.out, "missing           1 (IDs no audit record covers)")) << r.out;
  EXPECT_TRUE(has(r.out, "  " + ids[9] + " (")) << r.out;
  EXPECT_TRUE(has(r.out, "FAILED: 1 ID missing from the audit logs")) << r.out;

  const std::string rest = file("rest.log", "00000000000000bb 0/0 " + ids[9] + " " + ids[9] + "\n");
  r = snowid_cli({"check", "--audit", partial, "--audit", rest, path, "--json"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  const auto json = nlohmann::json::parse(r.out);
  EXPECT_EQ(json["ok"], true);
  EXPECT_EQ(json["audit"]["files"], 2);
  EXPECT_EQ(json["audit"]["incarnations"], 2);
  EXPECT_EQ(json["audit"]["missing"]["count"], 0);

  // An audit log of another layout is bad input, not a finding.
  r = snowid_cli({"check", "--audit", partial, path, "--preset", "discord"});
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_TRUE(has(r.err, "written with layout 41/5/5/12")) << r.err;
}

TEST_F(CheckCli, JsonReportHasTheFindings) {
  auto ids = generate(100);
  ids.push_back(ids[10]);
  const ProcessResult r = snowid_cli({"check", "--json", file("ids", join_lines(ids))});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  const auto json = nlohmann::json::parse(r.out);
  EXPECT_EQ(json["ok"], false);
  EXPECT_EQ(json["ids"], 101);
  EXPECT_EQ(json["duplicates"]["count"], 1);
  EXPECT_EQ(json["duplicates"]["examples"][0]["id"], ids[10]);
  EXPECT_EQ(json["order_violations"]["count"], 1);
  EXPECT_EQ(json["order_violations"]["examples"][0]["where"]["line"], 101);
  EXPECT_EQ(json["order_violations"]["examples"][0]["previous"], ids[99]);
  EXPECT_EQ(json["future"]["count"], 0);
  EXPECT_TRUE(json["audit"].is_null());
  ASSERT_EQ(json["nodes"].size(), 1u);
  EXPECT_EQ(json["nodes"][0]["ids"], 101);
  EXPECT_EQ(json["nodes"][0]["worker"], 0);
}

TEST_F(CheckCli, BadInputIsOneLineAndExitTwo) {
  const auto ids = generate(3);
  auto expect_usage = [](const ProcessResult& r, const std::string& says) {
    EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
    EXPECT_EQ(r.out, "");
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_TRUE(has(r.err, says)) << r.err;
  };
  const std::string bad = file("bad", ids[0] + "\n" + ids[1] + "\nnot-an-id\n" + ids[2] + "\n");
  expect_usage(snowid_cli({"check", bad}), bad + ":3: 'not-an-id' is not an ID");
  expect_usage(snowid_cli({"check", dir.file("nope")}), "cannot open " + dir.file("nope"));
  const std::string good = file("good", join_lines(ids));
  expect_usage(snowid_cli({"check", good, "--max-drift", "5"}), "with a unit");
  expect_usage(snowid_cli({"check", good, "--now", "soon"}), "--now");
  expect_usage(snowid_cli({"check", good, "--preset", "flake"}), "unknown preset");
  expect_usage(snowid_cli({"check", good, "--audit", bad}), bad + ":1: not an audit record");
  expect_usage(snowid_cli({"check", good, "--audit", dir.file("nope.log")}), "cannot open");
  expect_usage(snowid_cli({"check", file("js", "9007199254740992\n"), "--preset", "js-safe"}),
               "bits above");
}

TEST_F(CheckCli, HelpDocumentsFormatAndExitCodes) {
  const ProcessResult r = snowid_cli({"check", "--help"});
  EXPECT_EQ(r.exit_code, 0);
  for (const char* part : {"NAME<TAB>ID", "--audit", "--max-drift", "Exit codes: 0 nothing found",
                           "--preset", "missing"}) {
    EXPECT_TRUE(has(r.out, part)) << part << "\n" << r.out;
  }
}

}  // namespace
}  // namespace snowid
