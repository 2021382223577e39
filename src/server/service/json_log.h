// snowidd's log lines as JSON (log_format = "json"), for log pipelines: one
// object per line, {"time":"2026-01-02T03:04:05.678Z","level":"info",
// "message":"..."}, the time in UTC with milliseconds, the level as the
// text format names it (trace, debug, info, warning, error, critical). A
// message's bytes that are not UTF-8 are replaced (U+FFFD), so every line
// parses. The text format stays the default.
#pragma once

#include <spdlog/formatter.h>

#include <memory>

namespace snowid::server {

// A spdlog formatter that writes each record as one JSON object and a
// newline. Stateless: clones are independent, and it is as thread-safe as
// spdlog requires of a formatter (one per sink, called under its lock).
class JsonLogFormatter final : public spdlog::formatter {
 public:
  void format(const spdlog::details::log_msg& msg, spdlog::memory_buf_t& dest) override;
  std::unique_ptr<spdlog::formatter> clone() const override;
};

}  // namespace snowid::server
