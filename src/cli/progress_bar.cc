#include "progress_bar.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>

namespace snowid::cli {
namespace {

constexpr int kBarWidth = 30;
constexpr std::uint64_t kNever = std::numeric_limits<std::uint64_t>::max();

// "3.9 M IDs/s", "120.5 MB/s".
std::string rate_text(double per_second, ProgressUnit unit) {
  if (unit == ProgressUnit::kBytes) return fmt::format("{:.1f} MB/s", per_second / 1e6);
  if (per_second >= 1e6) return fmt::format("{:.1f} M IDs/s", per_second / 1e6);
  if (per_second >= 1e3) return fmt::format("{:.1f} k IDs/s", per_second / 1e3);
  return fmt::format("{:.0f} IDs/s", per_second);
}

// "1:05", "2:03:04"; "--:--" when unknown.
std::string duration_text(double seconds) {
  if (!(seconds >= 0) || seconds > 100.0 * 3600) return "--:--";
  const auto whole = static_cast<std::uint64_t>(seconds + 0.5);
  if (whole >= 3600)
    return fmt::format("{}:{:02}:{:02}", whole / 3600, whole / 60 % 60, whole % 60);
  return fmt::format("{}:{:02}", whole / 60, whole % 60);
}

std::string amount_text(std::uint64_t n, ProgressUnit unit) {
  if (unit == ProgressUnit::kBytes) return fmt::format("{:.1f} MB", static_cast<double>(n) / 1e6);
  return fmt::format("{} IDs", n);
}

}  // namespace

void ProgressFlags::add_to(CLI::App& command) {
  auto* on = command.add_flag("--progress", on_,
                              "Show a progress bar on stderr even for short runs or when stderr "
                              "is not a terminal (default: on a terminal, after 0.5 s)");
  auto* off = command.add_flag("--no-progress", off_, "Never show a progress bar");
  on->excludes(off);
}

ProgressMode ProgressFlags::mode() const {
  if (on_) return ProgressMode::kOn;
  if (off_) return ProgressMode::kOff;
  return ProgressMode::kAuto;
}

std::string progress_line(std::uint64_t done, std::uint64_t total, ProgressUnit unit,
                          std::chrono::duration<double> elapsed) {
  const double seconds = elapsed.count();
  const double rate = seconds > 0 ? static_cast<double>(done) / seconds : 0;
  if (total == 0) return fmt::format("{}  {}", amount_text(done, unit), rate_text(rate, unit));
  const double fraction = std::min(1.0, static_cast<double>(done) / static_cast<double>(total));
  const int filled = static_cast<int>(fraction * kBarWidth);
  const std::string bar = std::string(static_cast<std::size_t>(filled), '#') +
                          std::string(static_cast<std::size_t>(kBarWidth - filled), '.');
  const std::string counts = unit == ProgressUnit::kBytes
                                 ? fmt::format("{:.1f}/{:.1f} MB", static_cast<double>(done) / 1e6,
                                               static_cast<double>(total) / 1e6)
                                 : fmt::format("{}/{} IDs", done, total);
  const double left = done >= total ? 0 : rate > 0 ? static_cast<double>(total - done) / rate : -1;
  return fmt::format("[{}] {:3}%  {}  {}  ETA {}", bar, static_cast<int>(fraction * 100), counts,
                     rate_text(rate, unit), duration_text(left));
}

ProgressBar::ProgressBar(const Options& options)
    : options_(options),
      enabled_(options.mode == ProgressMode::kOn ||
               (options.mode == ProgressMode::kAuto && ::isatty(::fileno(options.stream)) == 1)),
      next_check_(enabled_ ? 0 : kNever),
      started_(Clock::now()) {
  if (options_.mode == ProgressMode::kOn) options_.delay = Clock::duration::zero();
  if (options_.check_every == 0) options_.check_every = 1;
}

ProgressBar::~ProgressBar() { finish(); }

void ProgressBar::look_at_clock() {
  next_check_ = done_ + options_.check_every;
  const Clock::time_point now = Clock::now();
  if (now - started_ < options_.delay) return;
  if (drawn_ && now - last_draw_ < options_.interval) return;
  draw(now);
}

void ProgressBar::draw(Clock::time_point now) {
  last_draw_ = now;
  drawn_ = true;
  const std::string line = progress_line(done_, options_.total, options_.unit, now - started_);
  // Spaces after the text wipe what a longer earlier line left on screen.
  const std::size_t pad = line.size() < last_length_ ? last_length_ - line.size() : 0;
  last_length_ = line.size();
  std::fprintf(options_.stream, "\r%s%*s", line.c_str(), static_cast<int>(pad), "");
  std::fflush(options_.stream);
}

void ProgressBar::finish() {
  if (!enabled_) return;
  enabled_ = false;
  next_check_ = kNever;
  if (!drawn_) return;
  draw(Clock::now());
  std::fputc('\n', options_.stream);
  std::fflush(options_.stream);
}

}  // namespace snowid::cli
