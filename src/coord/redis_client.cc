#include "redis_client.h"

#include <fmt/format.h>
#include <hiredis/hiredis.h>
#include <sys/time.h>

#include "redis_sentinel.h"

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

// The servers as listed: a command tries each once, starting with the one
// that answered last.
class EndpointRoute final : public RedisRoute {
 public:
  explicit EndpointRoute(std::vector<std::string> endpoints) : endpoints_(std::move(endpoints)) {}

  Result<std::string> server(std::size_t attempt, std::chrono::steady_clock::time_point) override {
    if (attempt >= endpoints_.size()) return Error{ErrorCode::kUnavailable, ""};
    return endpoints_[next_];
  }
  void failed(const std::string& server) override {
    if (endpoints_[next_] == server) next_ = (next_ + 1) % endpoints_.size();
  }
  bool primary_only() const override { return false; }

 private:
  std::vector<std::string> endpoints_;
  std::size_t next_ = 0;  // the server to connect to next
};

// Every failure of one command in a message, up to about this many characters.
constexpr std::size_t kMaxFailuresText = 600;

}  // namespace

redisContext* redis_connect(const std::string& endpoint, std::chrono::milliseconds timeout,
                            std::string* why) {
  const std::size_t colon = endpoint.rfind(':');
  std::string host = endpoint.substr(0, colon);
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  const int port = std::stoi(endpoint.substr(colon + 1));
  const timeval tv = to_timeval(timeout);
  redisContext* context = redisConnectWithTimeout(host.c_str(), port, tv);
  if (context == nullptr) {
    *why = "out of memory";
    return nullptr;
  }
  if (context->err != 0) {
    *why = context->errstr;
    redisFree(context);
    return nullptr;
  }
  redisSetTimeout(context, tv);
  return context;
}

Result<RedisReply> redis_request(redisContext* context, const std::vector<std::string>& argv) {
  redisReply* reply = run(context, argv);
  if (reply == nullptr) return Error{ErrorCode::kUnavailable, context->errstr};
  Result<RedisReply> answer = RedisReply{};
  if (reply->type == REDIS_REPLY_ERROR) {
    answer = Error{ErrorCode::kUnavailable, std::string(reply->str, reply->len)};
  } else {
    answer = convert(*reply);
  }
  freeReplyObject(reply);
  return answer;
}

Result<std::unique_ptr<RedisClient>> RedisClient::connect(const RedisOptions& options) {
  if (options.request_timeout.count() <= 0) {
    return invalid_argument("the redis request timeout must be positive");
  }
  if (!options.sentinels.empty()) {
    if (!options.endpoints.empty()) {
      return invalid_argument(
          "redis endpoints and Sentinels are both given: the Sentinels name the primary, so "
          "give one of them");
    }
    auto route = make_sentinel_route(options);
    if (!route.ok()) return route.error();
    return std::unique_ptr<RedisClient>(new RedisClient(options, std::move(*route)));
  }
  if (options.endpoints.empty()) return invalid_argument("no redis endpoint is configured");
  for (const std::string& endpoint : options.endpoints) {
    auto parsed = parse_redis_endpoints(endpoint);
    if (!parsed.ok()) return parsed.error();
  }
  return std::unique_ptr<RedisClient>(
      new RedisClient(options, std::make_unique<EndpointRoute>(options.endpoints)));
}

RedisClient::RedisClient(const RedisOptions& options, std::unique_ptr<RedisRoute> route)
    : options_(options), route_(std::move(route)) {}

RedisClient::~RedisClient() { close(); }

void RedisClient::close() {
  if (context_ != nullptr) redisFree(context_);
  context_ = nullptr;
}

std::string RedisClient::open(const std::string& endpoint) {
  close();
  server_ = endpoint;
  std::string why;
  redisContext* context = redis_connect(endpoint, options_.request_timeout, &why);
  if (context == nullptr) return why;
  std::vector<std::vector<std::string>> greetings;
  if (!options_.password.empty() || !options_.user.empty()) {
    greetings.push_back(options_.user.empty()
                            ? std::vector<std::string>{"AUTH", options_.password}
                            : std::vector<std::string>{"AUTH", options_.user, options_.password});
  }
  if (options_.database != 0) greetings.push_back({"SELECT", std::to_string(options_.database)});
  // A Sentinel may name a server that is no primary any more (it has not
  // seen the failover yet, or the server was demoted since).
  if (route_->primary_only()) greetings.push_back({"ROLE"});
  for (const auto& greeting : greetings) {
    auto reply = redis_request(context, greeting);
    if (!reply.ok()) {
      why = fmt::format("{} refused: {}", greeting[0], reply.error().message);
    } else if (greeting[0] == "ROLE" &&
               (reply->elements.empty() || reply->elements[0].text != "master")) {
      why = fmt::format("it is not the primary (ROLE: {})",
                        reply->elements.empty() ? "unexpected reply" : reply->elements[0].text);
    }
    if (!why.empty()) {
      redisFree(context);
      return why;
    }
  }
  if (!options_.password.empty() || !options_.user.empty() || options_.database != 0) {
    counters_.sign_ins.fetch_add(1, std::memory_order_relaxed);
  }
  context_ = context;
  ++connections_;
  return "";
}

Result<RedisReply> RedisClient::command(const std::vector<std::string>& argv) {
  std::string failures;
  const auto begun = std::chrono::steady_clock::now();
  for (std::size_t attempt = 0;; ++attempt) {
    const auto started = std::chrono::steady_clock::now();
    std::string why;
    if (context_ == nullptr) {
      auto server = route_->server(attempt, begun);
      if (!server.ok()) {
        if (!server.error().message.empty()) {
          failures += (failures.empty() ? "" : "; ") + server.error().message;
        }
        break;
      }
      why = open(*server);
    }
    redisReply* reply = why.empty() ? run(context_, argv) : nullptr;
    if (why.empty() && reply == nullptr) why = context_->errstr;
    bool failed = reply == nullptr;
    Result<RedisReply> answer = RedisReply{};
    if (reply != nullptr && reply->type == REDIS_REPLY_ERROR) {
      const std::string text(reply->str, reply->len);
      failed = true;
      if (text.rfind("READONLY", 0) == 0 || text.rfind("LOADING", 0) == 0 ||
          text.rfind("MASTERDOWN", 0) == 0 || text.rfind("NOREPLICAS", 0) == 0) {
        why = text;  // another server may take it (NOREPLICAS: min-replicas-to-write)
      } else {
        answer = Error{ErrorCode::kUnavailable,
                       fmt::format("redis {} refused {}: {}", server_, argv[0], text)};
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
    route_->failed(server_);
    if (failures.size() < kMaxFailuresText) {
      failures += fmt::format("{}{}: {}", failures.empty() ? "" : "; ", server_, why);
    }
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
