#include "redis_client.h"

#include <fmt/format.h>
#include <hiredis/hiredis.h>
#include <sys/time.h>

namespace snowid {

Result<std::vector<std::string>> parse_redis_endpoints(std::string_view list) {
  return coord::parse_host_port_list(list, "redis", {"redis://"});
}

}  // namespace snowid

namespace snowid::coord {
namespace {

timeval to_timeval(std::chrono::milliseconds ms) {
  timeval tv{};
  tv.tv_sec = static_cast<time_t>(ms.count() / 1000);
  tv.tv_usec = static_cast<suseconds_t>((ms.count() % 1000) * 1000);
  return tv;
}

RedisReply convert(const redisReply& reply) {
  RedisReply out;
  switch (reply.type) {
    case REDIS_REPLY_INTEGER:
      out.kind = RedisReply::Kind::kInteger;
      out.integer = reply.integer;
      break;
    case REDIS_REPLY_STRING:
    case REDIS_REPLY_STATUS:
      out.kind = RedisReply::Kind::kText;
      out.text.assign(reply.str, reply.len);
      break;
    case REDIS_REPLY_ARRAY:
      out.kind = RedisReply::Kind::kArray;
      for (std::size_t i = 0; i < reply.elements; ++i)
        out.elements.push_back(convert(*reply.element[i]));
      break;
    default:
      break;  // nil
  }
  return out;
}

// Runs argv on `context`; the reply (owned by the caller) or nullptr on an
// I/O error.
redisReply* run(redisContext* context, const std::vector<std::string>& argv) {
  std::vector<const char*> pointers;
  std::vector<std::size_t> lengths;
  for (const std::string& a : argv) {
    pointers.push_back(a.data());
    lengths.push_back(a.size());
  }
  return static_cast<redisReply*>(
      redisCommandArgv(context, static_cast<int>(argv.size()), pointers.data(), lengths.data()));
}

}  // namespace

Result<std::unique_ptr<RedisClient>> RedisClient::connect(const RedisOptions& options) {
  if (options.endpoints.empty()) return invalid_argument("no redis endpoint is configured");
  for (const std::string& endpoint : options.endpoints) {
    auto parsed = parse_redis_endpoints(endpoint);
    if (!parsed.ok()) return parsed.error();
  }
  if (options.request_timeout.count() <= 0) {
    return invalid_argument("the redis request timeout must be positive");
  }
  return std::unique_ptr<RedisClient>(new RedisClient(options));
}

RedisClient::RedisClient(const RedisOptions& options) : options_(options) {}

RedisClient::~RedisClient() { close(); }

void RedisClient::close() {
  if (context_ != nullptr) redisFree(context_);
  context_ = nullptr;
}

std::string RedisClient::open(std::size_t index) {
  close();
  const std::string& endpoint = options_.endpoints[index];
  const std::size_t colon = endpoint.rfind(':');
  std::string host = endpoint.substr(0, colon);
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  const int port = std::stoi(endpoint.substr(colon + 1));
  const timeval timeout = to_timeval(options_.request_timeout);
  redisContext* context = redisConnectWithTimeout(host.c_str(), port, timeout);
  if (context == nullptr) return "out of memory";
  if (context->err != 0) {
    std::string why = context->errstr;
    redisFree(context);
    return why;
  }
  redisSetTimeout(context, timeout);
  std::vector<std::vector<std::string>> greetings;
  if (!options_.password.empty() || !options_.user.empty()) {
    greetings.push_back(options_.user.empty()
                            ? std::vector<std::string>{"AUTH", options_.password}
                            : std::vector<std::string>{"AUTH", options_.user, options_.password});
  }
  if (options_.database != 0) greetings.push_back({"SELECT", std::to_string(options_.database)});
  for (const auto& greeting : greetings) {
    redisReply* reply = run(context, greeting);
    std::string why;
    if (reply == nullptr) {
      why = context->errstr;
    } else if (reply->type == REDIS_REPLY_ERROR) {
      why = fmt::format("{} refused: {}", greeting[0], std::string(reply->str, reply->len));
    }
    if (reply != nullptr) freeReplyObject(reply);
    if (!why.empty()) {
      redisFree(context);
      return why;
    }
  }
  if (!greetings.empty()) counters_.sign_ins.fetch_add(1, std::memory_order_relaxed);
  context_ = context;
  current_ = index;
  ++connections_;
  return "";
}

Result<RedisReply> RedisClient::command(const std::vector<std::string>& argv) {
  std::string failures;
  const std::size_t count = options_.endpoints.size();
  const std::size_t first = current_;
  for (std::size_t attempt = 0; attempt < count; ++attempt) {
    const std::size_t index = (first + attempt) % count;
    const auto started = std::chrono::steady_clock::now();
    std::string why;
    if (context_ == nullptr || index != current_) why = open(index);
    redisReply* reply = why.empty() ? run(context_, argv) : nullptr;
    if (why.empty() && reply == nullptr) why = context_->errstr;
    bool failed = reply == nullptr;
    Result<RedisReply> answer = RedisReply{};
    if (reply != nullptr && reply->type == REDIS_REPLY_ERROR) {
      const std::string text(reply->str, reply->len);
      failed = true;
      if (text.rfind("READONLY", 0) == 0 || text.rfind("LOADING", 0) == 0 ||
          text.rfind("MASTERDOWN", 0) == 0) {
        why = text;  // another endpoint may take it
      } else {
        answer =
            Error{ErrorCode::kUnavailable,
                  fmt::format("redis {} refused {}: {}", options_.endpoints[index], argv[0], text)};
      }
    } else if (reply != nullptr) {
      answer = convert(*reply);
    }
    if (reply != nullptr) freeReplyObject(reply);
    counters_.record(std::chrono::duration_cast<std::chrono::microseconds>(
                         std::chrono::steady_clock::now() - started),
                     failed);
    if (why.empty()) return answer;
    close();
    current_ = (index + 1) % count;
    failures +=
        fmt::format("{}{}: {}", failures.empty() ? "" : "; ", options_.endpoints[index], why);
  }
  return Error{ErrorCode::kUnavailable, "no redis endpoint answered (" + failures + ")"};
}

Result<RedisReply> RedisClient::eval(const std::string& script,
                                     const std::vector<std::string>& keys,
                                     const std::vector<std::string>& args) {
  std::vector<std::string> argv{"EVAL", script, std::to_string(keys.size())};
  argv.insert(argv.end(), keys.begin(), keys.end());
  argv.insert(argv.end(), args.begin(), args.end());
  return command(argv);
}

}  // namespace snowid::coord
