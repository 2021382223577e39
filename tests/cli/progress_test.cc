// The progress bar of `snowid gen` and `snowid check`: its text, and the real
// binary run with stderr on a pseudo-terminal (bar drawn) or on a pipe (no
// bar), stdout always holding the IDs alone.
#include <fcntl.h>
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <pty.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <fstream>

#include "progress_bar.h"
#include "subprocess.h"

namespace snowid {
namespace {

using cli::progress_line;
using cli::ProgressBar;
using cli::ProgressMode;
using cli::ProgressUnit;
using std::chrono::seconds;
using test::ProcessResult;
using test::run_process;
using test::split_lines;

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// `bytes` as the bar writes them: "9.4" for 9 388 890.
std::string fmt_megabytes(std::size_t bytes) {
  return fmt::format("{:.1f}", static_cast<double>(bytes) / 1e6);
}

// What a run on a terminal left: its exit code, what it wrote to the
// terminal (stdin and stderr), and its stdout (a file).
struct TerminalRun {
  int exit_code = -1;
  std::string terminal;
  std::string out;
};

// Runs `argv` with stdin and stderr on a new pseudo-terminal and stdout to
// `stdout_path`; kills it after `limit`.
TerminalRun run_on_terminal(const std::vector<std::string>& argv, const std::string& stdout_path,
                            seconds limit = seconds{120}) {
  TerminalRun run;
  int master = -1;
  const pid_t pid = ::forkpty(&master, nullptr, nullptr, nullptr);
  if (pid < 0) {
    ADD_FAILURE() << "forkpty failed";
    return run;
  }
  if (pid == 0) {
    const int out = ::open(stdout_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (out < 0 || ::dup2(out, STDOUT_FILENO) < 0) ::_exit(126);
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    ::execv(args[0], args.data());
    ::_exit(127);
  }
  const auto deadline = std::chrono::steady_clock::now() + limit;
  char buffer[4096];
  for (;;) {
    if (std::chrono::steady_clock::now() > deadline) {
      ::kill(pid, SIGKILL);
      ADD_FAILURE() << "timed out: " << argv[1];
      break;
    }
    pollfd p{master, POLLIN, 0};
    if (::poll(&p, 1, 100) <= 0) continue;
    const ssize_t n = ::read(master, buffer, sizeof buffer);
    if (n <= 0) break;  // EIO: the last holder of the terminal has gone
    run.terminal.append(buffer, static_cast<std::size_t>(n));
  }
  ::close(master);
  int status = 0;
  ::waitpid(pid, &status, 0);
  run.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  run.out = test::read_file(stdout_path);
  return run;
}

std::vector<std::string> cli(std::vector<std::string> args) {
  args.insert(args.begin(), SNOWID_CLI_PATH);
  return args;
}

// `text` holds `count` IDs, each greater than the one before.
void expect_increasing_ids(const std::string& text, std::size_t count) {
  const auto lines = split_lines(text);
  ASSERT_EQ(lines.size(), count);
  std::uint64_t previous = 0;
  for (const auto& line : lines) {
    std::uint64_t id = 0;
    const auto [end, ec] = std::from_chars(line.data(), line.data() + line.size(), id);
    ASSERT_TRUE(ec == std::errc{} && end == line.data() + line.size()) << line;
    ASSERT_GT(id, previous);
    previous = id;
  }
}

TEST(ProgressLine, KnownTotalShowsBarPercentCountsRateAndTimeLeft) {
  EXPECT_EQ(progress_line(1500, 3000, ProgressUnit::kIds, seconds{1}),
            "[###############...............]  50%  1500/3000 IDs  1.5 k IDs/s  ETA 0:01");
  EXPECT_EQ(progress_line(3'000'000, 3'000'000, ProgressUnit::kIds, seconds{2}),
            "[##############################] 100%  3000000/3000000 IDs  1.5 M IDs/s  ETA 0:00");
  EXPECT_EQ(progress_line(10'000'000, 40'000'000, ProgressUnit::kBytes, seconds{5}),
            "[#######.......................]  25%  10.0/40.0 MB  2.0 MB/s  ETA 0:15");
}

TEST(ProgressLine, UnknownTotalShowsCountAndRate) {
  EXPECT_EQ(progress_line(2'400'000, 0, ProgressUnit::kBytes, seconds{3}), "2.4 MB  0.8 MB/s");
  EXPECT_EQ(progress_line(90, 0, ProgressUnit::kIds, seconds{3}), "90 IDs  30 IDs/s");
}

TEST(ProgressLine, TimeLeftBeyondAnHourAndUnknown) {
  EXPECT_EQ(progress_line(1, 7201, ProgressUnit::kIds, seconds{1}),
            "[..............................]   0%  1/7201 IDs  1 IDs/s  ETA 2:00:00");
  EXPECT_EQ(progress_line(0, 10, ProgressUnit::kIds, seconds{0}),
            "[..............................]   0%  0/10 IDs  0 IDs/s  ETA --:--");
}

// Everything `bar` wrote to its stream, a temporary file.
std::string written(std::FILE* stream) {
  std::fflush(stream);
  std::rewind(stream);
  std::string text;
  char buffer[512];
  while (std::size_t n = std::fread(buffer, 1, sizeof buffer, stream)) text.append(buffer, n);
  std::fclose(stream);
  return text;
}

TEST(ProgressBarOutput, ForcedOnDrawsWithCarriageReturnsAndEndsTheLine) {
  std::FILE* stream = std::tmpfile();
  ASSERT_NE(stream, nullptr);
  {
    ProgressBar::Options options;
    options.total = 1000;
    options.mode = ProgressMode::kOn;
    options.check_every = 100;
    options.stream = stream;
    ProgressBar bar(options);
    for (int i = 0; i < 1000; ++i) bar.add(1);
  }
  const std::string text = written(stream);
  EXPECT_EQ(text.front(), '\r') << text;
  EXPECT_EQ(text.back(), '\n') << text;
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 1) << text;
  EXPECT_TRUE(has(text, " 100%  1000/1000 IDs")) << text;
}

TEST(ProgressBarOutput, AutoOnAFileAndOffPrintNothing) {
  for (ProgressMode mode : {ProgressMode::kAuto, ProgressMode::kOff}) {
    std::FILE* stream = std::tmpfile();
    ASSERT_NE(stream, nullptr);
    {
      ProgressBar::Options options;
      options.total = 10;
      options.mode = mode;
      options.check_every = 1;
      options.delay = std::chrono::milliseconds{0};
      options.stream = stream;
      ProgressBar bar(options);
      for (int i = 0; i < 10; ++i) bar.add(1);
      bar.finish();
    }
    EXPECT_EQ(written(stream), "");
  }
}

class ProgressCli : public ::testing::Test {
 protected:
  test::TempDir dir;
};

TEST_F(ProgressCli, GenOnATerminalWithProgressDrawsTheBarOnStderrOnly) {
  const TerminalRun run =
      run_on_terminal(cli({"gen", "-n", "3000000", "--progress"}), dir.file("ids"));
  ASSERT_EQ(run.exit_code, 0) << run.terminal;
  EXPECT_TRUE(has(run.terminal, "\r[")) << run.terminal;
  EXPECT_TRUE(has(run.terminal, "] 100%  3000000/3000000 IDs")) << run.terminal;
  EXPECT_TRUE(has(run.terminal, "IDs/s  ETA ")) << run.terminal;
  EXPECT_TRUE(run.terminal.ends_with("\n")) << run.terminal;
  expect_increasing_ids(run.out, 3'000'000);
}

TEST_F(ProgressCli, GenOnATerminalWithoutAFlagDrawsTheBarForALongRunOnly) {
  // 12 M IDs take over 1.5 s: at most 4096 IDs per ms, at most 1 s ahead of the clock.
  const TerminalRun long_run = run_on_terminal(cli({"gen", "-n", "12000000"}), "/dev/null");
  ASSERT_EQ(long_run.exit_code, 0) << long_run.terminal;
  EXPECT_TRUE(has(long_run.terminal, "] 100%  12000000/12000000 IDs")) << long_run.terminal;
  const TerminalRun short_run = run_on_terminal(cli({"gen", "-n", "1000"}), dir.file("ids"));
  ASSERT_EQ(short_run.exit_code, 0) << short_run.terminal;
  EXPECT_EQ(short_run.terminal, "");
  expect_increasing_ids(short_run.out, 1000);
}

TEST_F(ProgressCli, NoProgressSuppressesTheBarOnATerminal) {
  const TerminalRun run =
      run_on_terminal(cli({"gen", "-n", "3000000", "--no-progress"}), dir.file("ids"));
  ASSERT_EQ(run.exit_code, 0) << run.terminal;
  EXPECT_EQ(run.terminal, "");
  expect_increasing_ids(run.out, 3'000'000);
}

TEST_F(ProgressCli, FormattedKindsDrawTheBarToo) {
  const TerminalRun run = run_on_terminal(
      cli({"gen", "--kind", "ulid", "-n", "200000", "--progress"}), dir.file("ids"));
  ASSERT_EQ(run.exit_code, 0) << run.terminal;
  EXPECT_TRUE(has(run.terminal, "] 100%  200000/200000 IDs")) << run.terminal;
  EXPECT_EQ(split_lines(run.out).size(), 200000u);
}

// Runs that last well over the 0.5 s delay, so only stderr not being a
// terminal keeps the bar away.
TEST_F(ProgressCli, NoBarWhenStderrIsAPipe) {
  // run_process gives the child pipes for stdout and stderr.
  const ProcessResult gen =
      run_process({"/bin/sh", "-c", std::string(SNOWID_CLI_PATH) + " gen -n 12000000 > /dev/null"});
  ASSERT_EQ(gen.exit_code, 0) << gen.err;
  EXPECT_EQ(gen.err, "");
  const ProcessResult ids = run_process(cli({"gen", "-n", "300000"}));
  ASSERT_EQ(ids.exit_code, 0) << ids.err;
  std::ofstream(dir.file("ids"), std::ios::binary) << ids.out;
  const ProcessResult check = run_process(
      {"/bin/sh", "-c", "(sleep 1; cat " + dir.file("ids") + ") | " + SNOWID_CLI_PATH + " check"});
  EXPECT_EQ(check.exit_code, 0) << check.err;
  EXPECT_EQ(check.err, "");
  EXPECT_TRUE(has(check.out, "result            OK")) << check.out;
}

TEST_F(ProgressCli, CheckOnATerminalWithoutAFlagDrawsTheBarForALongRun) {
  const ProcessResult ids = run_process(cli({"gen", "-n", "300000"}));
  ASSERT_EQ(ids.exit_code, 0) << ids.err;
  std::ofstream(dir.file("ids"), std::ios::binary) << ids.out;
  const TerminalRun run = run_on_terminal(
      {"/bin/sh", "-c", "(sleep 1; cat " + dir.file("ids") + ") | " + SNOWID_CLI_PATH + " check"},
      dir.file("report"));
  EXPECT_EQ(run.exit_code, 0) << run.terminal;
  EXPECT_TRUE(has(run.terminal, " MB/s")) << run.terminal;
  EXPECT_TRUE(run.terminal.ends_with("\n")) << run.terminal;
  EXPECT_TRUE(has(run.out, "checked 300000 IDs")) << run.out;
}

TEST_F(ProgressCli, CheckShowsBytesOfTheFilesOrCountAndRateOfAPipe) {
  const ProcessResult gen = run_process(cli({"gen", "-n", "500000"}));
  ASSERT_EQ(gen.exit_code, 0) << gen.err;
  const std::string ids = dir.file("ids");
  std::ofstream(ids, std::ios::binary) << gen.out;
  const std::string megabytes = fmt_megabytes(gen.out.size());

  const TerminalRun from_file =
      run_on_terminal(cli({"check", "--progress", ids}), dir.file("report"));
  EXPECT_EQ(from_file.exit_code, 0) << from_file.terminal;
  EXPECT_TRUE(has(from_file.terminal, "] 100%  " + megabytes + "/" + megabytes + " MB"))
      << from_file.terminal;
  EXPECT_TRUE(from_file.terminal.ends_with("\n")) << from_file.terminal;
  EXPECT_TRUE(has(from_file.out, "checked 500000 IDs")) << from_file.out;
  EXPECT_FALSE(has(from_file.out, "MB/s")) << from_file.out;

  const TerminalRun piped = run_on_terminal(
      {"/bin/sh", "-c", "cat " + ids + " | " + SNOWID_CLI_PATH + " check --progress"},
      dir.file("report"));
  EXPECT_EQ(piped.exit_code, 0) << piped.terminal;
  EXPECT_TRUE(has(piped.terminal, "\r" + megabytes + " MB  ")) << piped.terminal;
  EXPECT_TRUE(has(piped.terminal, " MB/s")) << piped.terminal;
  EXPECT_FALSE(has(piped.terminal, "%")) << piped.terminal;
  EXPECT_TRUE(has(piped.out, "checked 500000 IDs")) << piped.out;
}

TEST_F(ProgressCli, ProgressAndNoProgressTogetherAreBadInput) {
  for (const char* command : {"gen", "check"}) {
    const ProcessResult r = run_process(cli({command, "--progress", "--no-progress"}));
    EXPECT_EQ(r.exit_code, 2) << command << r.err;
    EXPECT_EQ(r.out, "");
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  }
}

TEST_F(ProgressCli, HelpDocumentsTheFlags) {
  for (const char* command : {"gen", "check"}) {
    const ProcessResult r = run_process(cli({command, "--help"}));
    EXPECT_EQ(r.exit_code, 0);
    EXPECT_TRUE(has(r.out, "--progress")) << r.out;
    EXPECT_TRUE(has(r.out, "--no-progress")) << r.out;
  }
}

}  // namespace
}  // namespace snowid
