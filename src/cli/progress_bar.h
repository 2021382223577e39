// A one-line progress bar on stderr for long runs of the snowid CLI
// (`snowid gen`, `snowid check`).
//
// Contract:
// - Output goes to stderr only, never to stdout, so `snowid gen > ids.txt`
//   and pipes read exactly the IDs.
// - In ProgressMode::kAuto the bar is drawn only when stderr is a terminal
//   (isatty) and only once the run has lasted `delay` (0.5 s by default):
//   short runs and redirected stderr print nothing at all. kOn draws it from
//   the start, terminal or not; kOff never draws it.
// - The line is redrawn in place with '\r' at most every `interval` (100 ms,
//   10 times a second) and shows done/total, percent, rate and time left
//   when the total is known, else the count and rate. finish() (or the
//   destructor) draws the last state and ends the line with '\n'; if
//   nothing was ever drawn it prints nothing.
// - Cost on the hot loop: advance_to() is an inline store and one compare;
//   the clock is read only when the count has grown by `check_every` since
//   the last look (the caller picks a stride of about 64 Ki items).
// Not thread-safe: one thread updates one bar.
#pragma once

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <string>
#include <string_view>

namespace snowid::cli {

enum class ProgressMode { kAuto, kOn, kOff };

// What the count is of: items shown as "IDs", or bytes shown as "MB".
enum class ProgressUnit { kIds, kBytes };

// --progress / --no-progress on a subcommand (the two exclude each other).
class ProgressFlags {
 public:
  void add_to(CLI::App& command);
  ProgressMode mode() const;

 private:
  bool on_ = false;
  bool off_ = false;
};

// The bar's text for `done` of `total` (0: unknown) after `elapsed`, without
// the leading '\r'. Exposed for tests.
std::string progress_line(std::uint64_t done, std::uint64_t total, ProgressUnit unit,
                          std::chrono::duration<double> elapsed);

class ProgressBar {
 public:
  using Clock = std::chrono::steady_clock;

  struct Options {
    std::uint64_t total = 0;  // 0: unknown, show count and rate only
    ProgressUnit unit = ProgressUnit::kIds;
    ProgressMode mode = ProgressMode::kAuto;
    std::uint64_t check_every = 1 << 16;  // look at the clock after this much more done
    Clock::duration delay = std::chrono::milliseconds{500};
    Clock::duration interval = std::chrono::milliseconds{100};
    std::FILE* stream = stderr;
  };

  explicit ProgressBar(const Options& options);
  ~ProgressBar();
  ProgressBar(const ProgressBar&) = delete;
  ProgressBar& operator=(const ProgressBar&) = delete;

  // Sets the count done so far (never decreasing). Cheap: see the contract.
  void advance_to(std::uint64_t done) {
    done_ = done;
    if (done_ >= next_check_) look_at_clock();
  }
  void add(std::uint64_t more) { advance_to(done_ + more); }

  // Draws the final state and ends the line, if the bar was ever shown.
  // Idempotent; later updates are ignored.
  void finish();

 private:
  void look_at_clock();
  void draw(Clock::time_point now);

  Options options_;
  bool enabled_;
  bool drawn_ = false;
  std::uint64_t done_ = 0;
  std::uint64_t next_check_;  // max() when disabled or finished
  Clock::time_point started_;
  Clock::time_point last_draw_{};
  std::size_t last_length_ = 0;  // of the line on screen
};

}  // namespace snowid::cli
