// Helpers shared by the segment tests: a store that can be made to fail, and
// reading the numbers a load process printed.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "id_checks.h"
#include "snowid/ext/segment_store.h"
#include "subprocess.h"

namespace snowid::test {

// Forwards to a real store, or fails every call with kUnavailable while down.
class FlakyStore final : public SegmentStore {
 public:
  FlakyStore(std::unique_ptr<SegmentStore> real, std::shared_ptr<std::atomic<bool>> down)
      : real_(std::move(real)), down_(std::move(down)) {}

  const char* kind() const override { return real_->kind(); }
  Status ping() override { return down_->load() ? Status(outage()) : real_->ping(); }
  Status create_tag(std::string_view tag, std::int64_t start, std::int64_t step,
                    std::string_view description) override {
    if (down_->load()) return outage();
    return real_->create_tag(tag, start, step, description);
  }
  Result<std::vector<SegmentTagRecord>> list_tags(std::size_t max_rows) override {
    if (down_->load()) return outage();
    return real_->list_tags(max_rows);
  }
  Status set_step(std::string_view tag, std::int64_t step) override {
    if (down_->load()) return outage();
    return real_->set_step(tag, step);
  }
  Result<SegmentRange> take_range(std::string_view tag,
                                  std::optional<std::int64_t> increment) override {
    if (down_->load()) return outage();
    return real_->take_range(tag, increment);
  }
  Result<TicketIdentity> ticket_identity() override {
    if (down_->load()) return outage();
    return real_->ticket_identity();
  }

 private:
  static Error outage() { return Error{ErrorCode::kUnavailable, "test outage"}; }
  std::unique_ptr<SegmentStore> real_;
  std::shared_ptr<std::atomic<bool>> down_;
};

// The numbers in a load process's output; an unterminated last line (the
// process was killed mid-write) is dropped.
inline std::vector<std::int64_t> parse_numbers(std::string text) {
  const auto last_newline = text.rfind('\n');
  text.resize(last_newline == std::string::npos ? 0 : last_newline + 1);
  std::vector<std::int64_t> numbers;
  for (const std::string& line : split_lines(text)) numbers.push_back(std::stoll(line));
  return numbers;
}

inline std::vector<std::int64_t> read_numbers(const std::string& path) {
  return parse_numbers(read_file(path));
}

struct LoadRuns {
  std::vector<std::vector<std::int64_t>> numbers;  // per process
  std::string failures;                            // stderr of processes that failed
};

// Runs `processes` copies of the load program `argv` at the same time.
inline LoadRuns run_loads_at_once(const std::vector<std::string>& argv, std::size_t processes,
                                  std::chrono::seconds limit) {
  std::vector<ProcessResult> results(processes);
  std::vector<std::thread> runners;
  for (std::size_t p = 0; p < processes; ++p) {
    runners.emplace_back([&, p] { results[p] = run_process(argv, {}, limit); });
  }
  for (auto& runner : runners) runner.join();
  LoadRuns runs;
  for (const ProcessResult& result : results) {
    if (result.exit_code != 0)
      runs.failures += "exit " + std::to_string(result.exit_code) + ": " + result.err;
    runs.numbers.push_back(parse_numbers(result.out));
  }
  return runs;
}

// What a database store must do for `snowid segment` (create, a second
// create refused, set-step, list, set-step of an unknown tag refused) on
// `url`, with tags `prefix`.cli and `prefix`.nope: "" if it did, else what went wrong.
inline std::string check_cli_manages_tags(const std::string& cli, const std::string& url,
                                          const std::string& prefix) {
  const auto run = [&](std::vector<std::string> args) {
    args.insert(args.begin(), cli);
    args.push_back("--segment-store");
    args.push_back(url);
    return run_process(args, {}, std::chrono::seconds{20});
  };
  const std::string tag = prefix + ".cli";
  const ProcessResult created = run({"segment", "create", tag, "--step", "30"});
  if (created.exit_code != 0) return "create: " + created.err;
  if (run({"segment", "create", tag}).exit_code != 1) return "a second create did not exit 1";
  const ProcessResult stepped = run({"segment", "set-step", tag, "60"});
  if (stepped.exit_code != 0) return "set-step: " + stepped.err;
  const ProcessResult listed = run({"segment", "list"});
  if (listed.exit_code != 0) return "list: " + listed.err;
  if (listed.out.find(tag) == std::string::npos || listed.out.find(" 60 ") == std::string::npos) {
    return "list shows no " + tag + " with step 60: " + listed.out;
  }
  if (run({"segment", "set-step", prefix + ".nope", "5"}).exit_code != 1) {
    return "set-step of an unknown tag did not exit 1";
  }
  return "";
}

// Two load processes (`load`, segment_load.cc) draw `count` numbers of `tag`
// each at the same time from the store at `url`, with ranges of at most
// `max_step` so that they race on the row: "" if both got all their numbers
// and none twice, else what went wrong.
inline std::string check_two_loads_share_nothing(const std::string& load, const std::string& url,
                                                 const std::string& tag, std::size_t count,
                                                 std::int64_t max_step) {
  const LoadRuns runs =
      run_loads_at_once({load, url, tag, std::to_string(count), "10", std::to_string(max_step)}, 2,
                        std::chrono::seconds{90});
  if (!runs.failures.empty()) return runs.failures;
  for (const auto& numbers : runs.numbers) {
    if (numbers.size() != count) return "a process printed " + std::to_string(numbers.size());
  }
  return check_unique_and_increasing(runs.numbers);
}

// A store at a port nobody listens on (`url`): take_range fails with
// kUnavailable within 3 s. "" if so, else what went wrong.
inline std::string check_unreachable_is_timely(const std::string& url) {
  SegmentStoreOptions options;
  options.call_timeout = std::chrono::milliseconds{1000};
  auto down = open_segment_store(url, options);
  if (!down.ok()) return "open: " + down.error().message;
  const auto started = std::chrono::steady_clock::now();
  auto range = (*down)->take_range("unreachable", std::nullopt);
  if (range.ok()) return "a range from an unreachable store";
  if (range.error().code != ErrorCode::kUnavailable)
    return "not kUnavailable: " + range.error().message;
  if (std::chrono::steady_clock::now() - started > std::chrono::seconds{3}) return "took over 3 s";
  return "";
}

}  // namespace snowid::test
