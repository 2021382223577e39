#include "json_log.h"

#include <chrono>
#include <nlohmann/json.hpp>
#include <string>

#include "time_text.h"

namespace snowid::server {

void JsonLogFormatter::format(const spdlog::details::log_msg& msg, spdlog::memory_buf_t& dest) {
  const auto unix_ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(msg.time.time_since_epoch());
  const auto level = spdlog::level::to_string_view(msg.level);
  const nlohmann::ordered_json record = {
      {"time", format_time(unix_ms)},
      {"level", std::string(level.data(), level.size())},
      {"message", std::string(msg.payload.data(), msg.payload.size())},
  };
  const std::string line =
      record.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n";
  dest.append(line.data(), line.data() + line.size());
}

std::unique_ptr<spdlog::formatter> JsonLogFormatter::clone() const {
  return std::make_unique<JsonLogFormatter>();
}

}  // namespace snowid::server
