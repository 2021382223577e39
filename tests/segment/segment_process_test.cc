// Segment mode across processes on SQLite: the CLI, a load process killed
// with kill -9 and restarted, and two processes sharing one file.
#include <gtest/gtest.h>
#include <signal.h>

#include <filesystem>
#include <set>
#include <thread>

#include "id_checks.h"
#include "segment_test_support.h"

namespace snowid {
namespace {

using test::run_process;
using test::TempDir;

const std::string kCli = SNOWID_CLI_PATH;
const std::string kLoad = SEGMENT_LOAD_PATH;

test::ProcessResult cli(std::vector<std::string> args, const std::string& cwd = "") {
  args.insert(args.begin(), kCli);
  if (cwd.empty()) return run_process(args, {}, std::chrono::seconds{20});
  std::string line = "cd '" + cwd + "' && exec";
  for (const auto& arg : args) line += " '" + arg + "'";
  return run_process({"/bin/sh", "-c", line}, {}, std::chrono::seconds{20});
}

TEST(SegmentCli, CreateListSetStep) {
  TempDir dir;
  const std::string url = "sqlite://" + dir.file("s.db");
  auto created = cli({"segment", "create", "orders", "--start", "100", "--step", "50",
                      "--description", "order numbers", "--segment-store", url});
  ASSERT_EQ(created.exit_code, 0) << created.err;
  EXPECT_NE(created.out.find("orders"), std::string::npos);
  ASSERT_EQ(cli({"segment", "create", "users", "--segment-store", url}).exit_code, 0);
  auto stepped = cli({"segment", "set-step", "users", "7", "--segment-store", url});
  ASSERT_EQ(stepped.exit_code, 0) << stepped.err;

  auto listed = cli({"segment", "list", "--segment-store", url});
  ASSERT_EQ(listed.exit_code, 0) << listed.err;
  const auto lines = test::split_lines(listed.out);
  ASSERT_EQ(lines.size(), 3u) << listed.out;
  EXPECT_EQ(lines[0].rfind("tag", 0), 0u);
  EXPECT_NE(lines[1].find("orders"), std::string::npos);
  EXPECT_NE(lines[1].find(" 100 "), std::string::npos);
  EXPECT_NE(lines[1].find(" 50 "), std::string::npos);
  EXPECT_NE(lines[1].find("order numbers"), std::string::npos);
  EXPECT_NE(lines[2].find("users"), std::string::npos);
  EXPECT_NE(lines[2].find(" 7 "), std::string::npos);
}

TEST(SegmentCli, DefaultStoreIsInTheStateDirectory) {
  TempDir dir;
  ASSERT_EQ(cli({"segment", "create", "orders"}, dir.path()).exit_code, 0);
  EXPECT_TRUE(std::filesystem::exists(dir.file(".snowid/segments.db")));
  auto listed = cli({"segment", "list"}, dir.path());
  ASSERT_EQ(listed.exit_code, 0) << listed.err;
  EXPECT_NE(listed.out.find("orders"), std::string::npos);
}

TEST(SegmentCli, BadInputExitsTwoWithOneLine) {
  TempDir dir;
  const std::string url = "sqlite://" + dir.file("s.db");
  const std::vector<std::vector<std::string>> bad = {
      {"segment", "create", "", "--segment-store", url},
      {"segment", "create", "#ticket", "--segment-store", url},
      {"segment", "create", std::string(129, 'a'), "--segment-store", url},
      {"segment", "create", "tab\there", "--segment-store", url},
      {"segment", "create", "ok", "--step", "0", "--segment-store", url},
      {"segment", "create", "ok", "--step", "-5", "--segment-store", url},
      {"segment", "create", "ok", "--start", "x", "--segment-store", url},
      {"segment", "create", "ok", "--description", std::string(300, 'd'), "--segment-store", url},
      {"segment", "set-step", "ok", "abc", "--segment-store", url},
      {"segment", "set-step", "ok", "--segment-store", url},
      {"segment", "list", "--segment-store", "mysql://x"},
      {"segment", "list", "--segment-store", "sqlite://"},
      {"segment", "frobnicate"},
      {"segment"},
  };
  for (const auto& args : bad) {
    auto result = cli(args);
    std::string command;
    for (const auto& arg : args) command += arg.substr(0, 40) + " ";
    SCOPED_TRACE(command);
    EXPECT_EQ(result.exit_code, 2);
    EXPECT_TRUE(result.out.empty()) << result.out;
    EXPECT_EQ(test::split_lines(result.err).size(), 1u) << result.err;
  }
}

TEST(SegmentCli, StoreFailuresExitOne) {
  TempDir dir;
  const std::string url = "sqlite://" + dir.file("s.db");
  ASSERT_EQ(cli({"segment", "create", "orders", "--segment-store", url}).exit_code, 0);
  auto again = cli({"segment", "create", "orders", "--segment-store", url});
  EXPECT_EQ(again.exit_code, 1);
  EXPECT_NE(again.err.find("already exists"), std::string::npos) << again.err;
  auto unknown = cli({"segment", "set-step", "nope", "10", "--segment-store", url});
  EXPECT_EQ(unknown.exit_code, 1);
  EXPECT_NE(unknown.err.find("unknown segment tag 'nope'"), std::string::npos) << unknown.err;
  auto unreachable = cli({"segment", "list", "--segment-store", "sqlite://" + dir.file("no/x.db")});
  EXPECT_EQ(unreachable.exit_code, 1);
  EXPECT_EQ(test::split_lines(unreachable.err).size(), 1u) << unreachable.err;
}

// Flickr's pair as MySQL counts it (auto_increment_increment 2, offsets 1
// and 2) made ticket servers with the CLI: offset 2 of 2 is MySQL's name for
// the even numbers (remainder 0), so the two stores hand out disjoint
// numbers, odd from the first and even from the second, as Flickr's did.
TEST(SegmentCli, FlickrsMysqlOffsetsOneAndTwoOfTwoServeDisjointNumbers) {
  TempDir dir;
  const std::string a = "sqlite://" + dir.file("a.db"), b = "sqlite://" + dir.file("b.db");
  auto first = cli({"segment", "ticket-init", "--increment", "2", "--offset", "1",
                    "--segment-store", a});
  ASSERT_EQ(first.exit_code, 0) << first.err;
  EXPECT_NE(first.out.find("n % 2 == 1"), std::string::npos) << first.out;
  auto second = cli({"segment", "ticket-init", "--increment", "2", "--offset", "2",
                     "--segment-store", b});
  ASSERT_EQ(second.exit_code, 0) << second.err;
  EXPECT_NE(second.out.find("n % 2 == 0"), std::string::npos) << second.out;
  EXPECT_EQ(*(*open_segment_store(b))->ticket_identity(), (TicketIdentity{2, 0}));

  auto set = open_segment_store(a + " " + b);
  ASSERT_TRUE(set.ok()) << set.error().message;
  ASSERT_TRUE((*set)->create_tag("tickets", 1, 10, "").ok());
  std::set<std::int64_t> from_a, from_b;
  for (int i = 0; i < 6; ++i) {
    auto range = (*set)->take_range("tickets", std::nullopt);
    ASSERT_TRUE(range.ok()) << range.error().message;
    for (std::int64_t n = range->first; n < range->end; n += range->stride) {
      (range->source == 0 ? from_a : from_b).insert(n);
    }
  }
  ASSERT_FALSE(from_a.empty());
  ASSERT_FALSE(from_b.empty());
  for (std::int64_t n : from_a) EXPECT_EQ(n % 2, 1) << n;
  for (std::int64_t n : from_b) {
    EXPECT_EQ(n % 2, 0) << n;
    EXPECT_EQ(from_a.count(n), 0u) << n << " from both stores";
  }
}

// Offsets beyond MySQL's 1..increment are refused, saying how the two
// conventions translate; snowid's 0 and MySQL's 2 (of 2) name the same
// remainder, so a set of those two stores is refused when opened.
TEST(SegmentCli, TicketOffsetsOutsideBothConventionsAreRefusedWithTheTranslation) {
  TempDir dir;
  auto beyond = cli({"segment", "ticket-init", "--increment", "2", "--offset", "3",
                     "--segment-store", "sqlite://" + dir.file("c.db")});
  EXPECT_EQ(beyond.exit_code, 2);
  EXPECT_EQ(test::split_lines(beyond.err).size(), 1u) << beyond.err;
  EXPECT_NE(beyond.err.find("MySQL's auto_increment_offset (1..increment)"), std::string::npos)
      << beyond.err;
  EXPECT_NE(beyond.err.find("remainders 1 and 0"), std::string::npos) << beyond.err;

  const std::string zero = "sqlite://" + dir.file("zero.db");
  const std::string two = "sqlite://" + dir.file("two.db");
  ASSERT_EQ(cli({"segment", "ticket-init", "--increment", "2", "--offset", "0",
                 "--segment-store", zero})
                .exit_code,
            0);
  ASSERT_EQ(cli({"segment", "ticket-init", "--increment", "2", "--offset", "2",
                 "--segment-store", two})
                .exit_code,
            0);
  auto clash = open_segment_store(zero + " " + two);
  ASSERT_FALSE(clash.ok());
  EXPECT_NE(clash.error().message.find("as ticket server 1 has"), std::string::npos)
      << clash.error().message;
}

// Kills a running load process three times with SIGKILL, restarting it on the
// same file each time: no number may ever come out twice.
TEST(SegmentProcesses, KillNineAndRestartNeverRepeats) {
  TempDir dir;
  const std::string url = "sqlite://" + dir.file("s.db");
  ASSERT_EQ(cli({"segment", "create", "orders", "--step", "100", "--segment-store", url}).exit_code,
            0);
  std::vector<std::int64_t> all;
  for (int round = 0; round < 4; ++round) {
    const std::string out = dir.file("out" + std::to_string(round));
    const bool last = round == 3;
    test::BackgroundProcess load({kLoad, url, "orders", last ? "5000" : "0", "7", "5000"}, out);
    if (last) {
      ASSERT_EQ(load.wait(), 0) << test::read_file(out + ".err");
    } else {
      // Let it run well into its ranges, then kill it mid-stream.
      for (int i = 0; i < 2000 && test::read_file(out).size() < 200'000; ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds{2});
      }
      load.signal(SIGKILL);
      EXPECT_EQ(load.wait(), -SIGKILL);
    }
    const auto numbers = test::read_numbers(out);
    EXPECT_GT(numbers.size(), 1000u) << "round " << round << ": " << test::read_file(out + ".err");
    all.insert(all.end(), numbers.begin(), numbers.end());
  }
  // Each run starts above every range an earlier run took: strictly increasing overall.
  EXPECT_EQ(test::check_unique_and_increasing({all}), "");
}

TEST(SegmentProcesses, TwoProcessesOnOneFileNeverShareANumber) {
  TempDir dir;
  const std::string url = "sqlite://" + dir.file("s.db");
  ASSERT_EQ(cli({"segment", "create", "orders", "--step", "10", "--segment-store", url}).exit_code,
            0);
  const test::LoadRuns runs = test::run_loads_at_once({kLoad, url, "orders", "20000", "5", "200"},
                                                      2, std::chrono::seconds{30});
  ASSERT_EQ(runs.failures, "");
  for (const auto& numbers : runs.numbers) EXPECT_EQ(numbers.size(), 20000u);
  EXPECT_EQ(test::check_unique_and_increasing(runs.numbers), "");
}

}  // namespace
}  // namespace snowid
