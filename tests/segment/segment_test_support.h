// Helpers shared by the segment tests: a store that can be made to fail, and
// reading the numbers a load process printed.
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "snowid/segment_store.h"
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

}  // namespace snowid::test
