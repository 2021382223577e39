// The Sentinel route (redis_sentinel.h): which Sentinel is asked, when, and
// for how long a command keeps asking.
#include "redis_sentinel.h"

#include <fmt/format.h>
#include <hiredis/hiredis.h>

#include <algorithm>
#include <chrono>
#include <thread>

namespace snowid {

Result<std::vector<std::string>> parse_redis_sentinels(std::string_view list) {
  return coord::parse_host_port_list(list, "redis sentinel", {"redis://"});
}

}  // namespace snowid

namespace snowid::coord {
namespace {

using std::chrono::milliseconds;
using std::chrono::steady_clock;

// The pause before asking again once a try after the first failed too: a
// failover takes the Sentinels a second or more (down-after-milliseconds,
// then the election), and a dead primary refuses connections at once.
constexpr milliseconds kPauseBetweenTries{100};

class SentinelRoute final : public RedisRoute {
 public:
  explicit SentinelRoute(const RedisOptions& options) : options_(options) {}

  Result<std::string> server(std::size_t attempt, steady_clock::time_point begun) override {
    const steady_clock::time_point deadline = begun + options_.request_timeout;
    std::string failures;
    for (std::size_t round = 0;; ++round) {
      if (attempt > 0 || round > 0) {
        if (steady_clock::now() + kPauseBetweenTries >= deadline) break;
        if (attempt > 1 || round > 0) std::this_thread::sleep_for(kPauseBetweenTries);
      }
      failures.clear();
      const std::size_t count = options_.sentinels.size();
      for (std::size_t k = 0; k < count; ++k) {
        const std::size_t index = (first_ + k) % count;
        // A Sentinel that hangs costs at most what is left of the command's time.
        const auto left = std::chrono::duration_cast<milliseconds>(deadline - steady_clock::now());
        auto primary =
            ask_sentinel(options_.sentinels[index], options_,
                         std::min(std::max(left, kPauseBetweenTries), options_.request_timeout));
        if (primary.ok()) {
          first_ = index;
          named_ = *primary;
          return primary;
        }
        failures += fmt::format("{}{}", failures.empty() ? "" : "; ", primary.error().message);
      }
    }
    return Error{ErrorCode::kUnavailable,
                 failures.empty()
                     ? fmt::format("no primary the Sentinels named for '{}' answered within {} ms",
                                   options_.sentinel_master, options_.request_timeout.count())
                     : failures};
  }

  void failed(const std::string& server) override {
    // The Sentinel that named it may not have seen the failover yet: the
    // next one is asked first.
    if (server == named_) first_ = (first_ + 1) % options_.sentinels.size();
    named_.clear();
  }

  bool primary_only() const override { return true; }

 private:
  RedisOptions options_;
  std::size_t first_ = 0;  // the Sentinel asked first
  std::string named_;      // the server it named last
};

}  // namespace

Result<std::string> ask_sentinel(const std::string& sentinel, const RedisOptions& options,
                                 milliseconds timeout) {
  std::string why;
  redisContext* context = redis_connect(sentinel, timeout, &why);
  if (context == nullptr) {
    return Error{ErrorCode::kUnavailable, fmt::format("Sentinel {}: {}", sentinel, why)};
  }
  Result<RedisReply> answer = RedisReply{};
  if (!options.sentinel_password.empty()) {
    answer = redis_request(context, {"AUTH", options.sentinel_password});
  }
  if (answer.ok()) {
    answer =
        redis_request(context, {"SENTINEL", "get-master-addr-by-name", options.sentinel_master});
  }
  redisFree(context);
  if (!answer.ok()) {
    return Error{ErrorCode::kUnavailable,
                 fmt::format("Sentinel {}: {}", sentinel, answer.error().message)};
  }
  const auto& parts = answer->elements;
  if (answer->is_nil()) {
    return Error{ErrorCode::kUnavailable, fmt::format("Sentinel {} monitors no master named '{}'",
                                                      sentinel, options.sentinel_master)};
  }
  if (parts.size() != 2 || parts[0].text.empty() || parts[1].text.empty()) {
    return Error{
        ErrorCode::kUnavailable,
        fmt::format("Sentinel {} answered get-master-addr-by-name unexpectedly", sentinel)};
  }
  const std::string& host = parts[0].text;
  const bool v6 = host.find(':') != std::string::npos;
  return fmt::format("{}{}{}:{}", v6 ? "[" : "", host, v6 ? "]" : "", parts[1].text);
}

Result<std::unique_ptr<RedisRoute>> make_sentinel_route(const RedisOptions& options) {
  for (const std::string& sentinel : options.sentinels) {
    auto parsed = parse_redis_sentinels(sentinel);
    if (!parsed.ok()) return parsed.error();
  }
  if (options.sentinel_master.empty()) {
    return invalid_argument("the Sentinels are given without the name of the master they monitor");
  }
  return std::unique_ptr<RedisRoute>(new SentinelRoute(options));
}

}  // namespace snowid::coord
