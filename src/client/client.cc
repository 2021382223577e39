// snowid::Client (include/snowid/client.h): buffers, the refill thread and
// failover between endpoints.
//
// Each buffer (one for Snowflake IDs, one per segment tag asked for) is an
// IdRing (id_ring.h) that callers take from without a lock. One thread
// refills them all: when a buffer falls to its low-water mark (a caller
// claiming the ring position `refill_trigger` wakes it; a timer catches the
// rest) it asks an endpoint drawn at random among the healthy ones for a
// batch, with a deadline, so that the clients of a fleet load every node
// alike. A failing endpoint is skipped until its backoff (with jitter) ends
// and another one is asked at once. `mutex_` guards only what the slow paths share: the wake
// flag, the news counter waiting callers watch, each buffer's last error,
// the call in flight and the tag map's growth; the ring itself needs none.
#include "snowid/client.h"

#include <fmt/format.h>
#include <grpcpp/grpcpp.h>
#include <time.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <fstream>
#include <limits>
#include <map>
#include <mutex>
#include <optional>
#include <random>
#include <shared_mutex>
#include <sstream>
#include <thread>

#include "business_answer.h"
#include "id_ring.h"
#include "snowid/segment_tag.h"
#include "snowid/v1/snowid.grpc.pb.h"

namespace snowid {
namespace {

namespace v1 = ::snowid::v1;
using std::chrono::milliseconds;
using std::chrono::nanoseconds;
using std::chrono::steady_clock;

constexpr std::uint32_t kMaxBatchLimit = 1'000'000;
constexpr std::int64_t kNeverExpires = std::numeric_limits<std::int64_t>::max();
// More than CLOCK_MONOTONIC_COARSE's resolution (one kernel tick, 1-10 ms).
constexpr milliseconds kCoarseTick{10};

// CLOCK_MONOTONIC at tick resolution (a few ms) in ns: read from memory the
// kernel shares, no system call, so cheap enough for every take. The same
// clock as steady_clock, only coarser.
std::int64_t coarse_now_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

bool valid_name(std::string_view name, std::string_view more, std::size_t max) {
  if (name.empty() || name.size() > max) return false;
  const auto letter = [](char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); };
  const auto digit = [](char c) { return c >= '0' && c <= '9'; };
  if (!letter(name[0])) return false;
  return std::all_of(name.begin() + 1, name.end(), [&](char c) {
    return letter(c) || digit(c) || more.find(c) != std::string_view::npos;
  });
}

// HOST:PORT or [IPV6]:PORT with a port in 1..65535.
bool valid_endpoint(std::string_view text) {
  const auto colon = text.rfind(':');
  if (colon == std::string_view::npos || colon == 0 || colon + 1 == text.size()) return false;
  const std::string_view port = text.substr(colon + 1);
  if (port.size() > 5 ||
      !std::all_of(port.begin(), port.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return false;
  }
  const int number = std::stoi(std::string(port));
  const std::string_view host = text.substr(0, colon);
  const bool bracketed = host.front() == '[';
  if (bracketed != (host.back() == ']')) return false;
  if (!bracketed && host.find(':') != std::string_view::npos) return false;
  return number >= 1 && number <= 65535 && host.find_first_of(" \t/") == std::string_view::npos;
}

std::size_t ring_capacity(std::uint32_t max_batch) {
  std::size_t capacity = 1;
  while (capacity < 2 * static_cast<std::size_t>(max_batch)) capacity *= 2;
  return capacity;
}

// What a failed call means for the client.
enum class Failure {
  kNode,      // the endpoint is down or slow: back off, ask the next one
  kTooLarge,  // the batch is above the server's max_batch: ask for less
  kRefused,   // this client's request is refused (token, agent, tag, mode)
};

Failure classify(grpc::StatusCode code) {
  switch (code) {
    case grpc::StatusCode::RESOURCE_EXHAUSTED:
      return Failure::kTooLarge;
    case grpc::StatusCode::UNAUTHENTICATED:
    case grpc::StatusCode::PERMISSION_DENIED:
    case grpc::StatusCode::INVALID_ARGUMENT:
    case grpc::StatusCode::NOT_FOUND:
    case grpc::StatusCode::FAILED_PRECONDITION:
      return Failure::kRefused;
    default:
      return Failure::kNode;
  }
}

// gRPC's own refusal of an answer above the channel's receive limit
// (SetMaxReceiveMessageSize), which comes with the status a node's "count
// above max_batch" has.
bool over_receive_limit(const grpc::Status& status) {
  return status.error_message().find("Received message larger than max") != std::string::npos;
}

// snowidd's refusal of a count above its max_batch ("count N is out of range
// 1..M"): the one RESOURCE_EXHAUSTED that asks for a smaller batch; any
// other (a proxy's, a broken node's) fails the endpoint instead of pinning
// the batch size down for good.
bool count_above_max_batch(const grpc::Status& status) {
  return status.error_message().find("out of range 1..") != std::string::npos;
}

// One buffer: Snowflake IDs (tag empty) or one segment tag's numbers.
struct Buffer {
  Buffer(std::string tag_name, std::size_t capacity, std::uint32_t first_batch)
      : ring(capacity), tag(std::move(tag_name)), batch(first_batch) {}

  client::IdRing ring;  // first: its cache-line alignment costs no padding here
  const std::string tag;
  // The ring position whose taker wakes the refill thread: the one that
  // leaves fewer than the low-water mark buffered. Written by the refill
  // thread after each batch, read (relaxed) by takers.
  std::atomic<std::uint64_t> refill_trigger{std::numeric_limits<std::uint64_t>::max()};
  // Set by the refill thread once a batch has arrived: callers then wait
  // empty_wait, not start_wait.
  std::atomic<bool> filled{false};
  // IDs taken off the ring expired (by callers or the refill thread).
  std::atomic<std::uint64_t> expired{0};

  // Refill thread only.
  std::uint32_t batch;
  std::uint32_t batch_cap =
      std::numeric_limits<std::uint32_t>::max();  // below the server's max_batch
  std::optional<steady_clock::time_point> last_refill;
  steady_clock::time_point refused_until{};  // no refill before this after a refusal

  // Guarded by Client's mutex_: why the last refill failed, cleared by a
  // success. `refused`: the nodes refuse this request (no point waiting).
  std::optional<Error> error;
  bool refused = false;
};

// What a batch answered holds beside its IDs: the node's issuer token
// (snowid-issuer initial metadata; empty if not sent).
struct Answered {
  std::vector<std::int64_t> ids;
  std::string issuer;
};

// The last ID of the batch before, per (tag, issuer), of one endpoint: each
// issuer's batches lie above its last (docs/clients.md, "What a client
// accepts"). At most kMaxIssuersTracked pairs: a node that sends a new token
// every time gains nothing but losing its older entries.
class IssuerMarks {
 public:
  static constexpr std::size_t kMaxIssuersTracked = 64;

  std::optional<std::int64_t> last(const std::string& tag, const std::string& issuer) const {
    const auto it = last_.find({tag, issuer});
    if (it == last_.end()) return std::nullopt;
    return it->second.id;
  }
  // Records `id` as the issuer's last; beyond kMaxIssuersTracked the pair
  // set longest ago goes.
  void set(const std::string& tag, const std::string& issuer, std::int64_t id) {
    if (last_.size() >= kMaxIssuersTracked && last_.find({tag, issuer}) == last_.end()) {
      last_.erase(std::min_element(last_.begin(), last_.end(), [](const auto& a, const auto& b) {
        return a.second.set_at < b.second.set_at;
      }));
    }
    last_[{tag, issuer}] = {id, ++sets_};
  }

 private:
  struct Last {
    std::int64_t id = 0;
    std::uint64_t set_at = 0;  // the count of set() calls when it was set
  };
  std::map<std::pair<std::string, std::string>, Last> last_;
  std::uint64_t sets_ = 0;
};

// Why a batch asked for `count` cannot be handed out, or "" if it can: 1 to
// count IDs, each in [0, 2^63) (fixed64 on the wire, so one at or above 2^63
// reads as negative here), strictly increasing, the first above `previous`.
std::string why_invalid(const std::vector<std::int64_t>& ids, std::uint32_t count,
                        std::optional<std::int64_t> previous) {
  if (ids.empty() || ids.size() > count) {
    return fmt::format("{} IDs for a batch of {}", ids.size(), count);
  }
  for (std::size_t i = 0; i < ids.size(); ++i) {
    if (ids[i] < 0) return "an ID at or above 2^63";
    if (i > 0 && ids[i] <= ids[i - 1]) return "IDs not strictly increasing";
  }
  if (previous && ids.front() <= *previous) {
    return fmt::format("a batch starting at {}, not above {}, the last of its issuer",
                       ids.front(), *previous);
  }
  return "";
}

struct Node {
  std::string target;
  std::unique_ptr<v1::IdService::Stub> stub;
  // Refill thread only.
  steady_clock::time_point retry_at{};
  milliseconds backoff{0};
  IssuerMarks marks;
};

class GrpcClient final : public Client {
 public:
  GrpcClient(const ClientOptions& options, std::shared_ptr<grpc::ChannelCredentials> credentials)
      : options_(options),
        capacity_(ring_capacity(options.max_batch)),
        snowflake_("", capacity_, options.initial_batch) {
    grpc::ChannelArguments args;
    // A batch of max_batch fixed64 IDs, or of kMaxBusinessBatch business
    // IDs, with room for the framing.
    args.SetMaxReceiveMessageSize(
        static_cast<int>(std::max<std::size_t>(std::size_t{options.max_batch} * 9,
                                               kMaxBusinessBatch * (kMaxBusinessIdBytes + 3)) +
                         4096));
    // gRPC's reconnects follow the client's own backoff, so that a node
    // that is back is used again within backoff_max.
    args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS,
                static_cast<int>(options.backoff_initial.count()));
    args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS,
                static_cast<int>(options.backoff_initial.count()));
    args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, static_cast<int>(options.backoff_max.count()));
    // Connections of its own: no state shared with other clients in the process.
    args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
    for (const std::string& target : options.endpoints) {
      nodes_.push_back(Node{
          target, v1::IdService::NewStub(grpc::CreateCustomChannel(target, credentials, args)),
          {}, milliseconds{0}, IssuerMarks{}});
      order_.push_back(order_.size());
    }
    thread_ = std::thread([this] { refill_loop(); });
  }

  ~GrpcClient() override {
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
      if (in_flight_ != nullptr) in_flight_->TryCancel();
    }
    work_.notify_all();
    news_cv_.notify_all();
    thread_.join();
  }

  Result<std::int64_t> next() override { return take(snowflake_); }

  Status next(std::span<std::int64_t> out) override {
    std::int64_t now = coarse_now_ns();
    for (std::int64_t& slot : out) {
      if (take_fresh(snowflake_, now, slot)) continue;
      auto waited = wait_and_take(snowflake_);
      if (!waited.ok()) return waited.error();
      slot = *waited;
      now = coarse_now_ns();
    }
    return {};
  }

  Result<std::int64_t> next(std::string_view tag) override {
    if (Status valid = validate_segment_tag(tag); !valid.ok()) return valid.error();
    return take(buffer_for(tag));
  }

  Status next_business(std::string_view tag, std::size_t count,
                       std::vector<std::string>& out) override {
    if (Status valid = validate_segment_tag(tag); !valid.ok()) return valid;
    if (count == 0 || count > kMaxBusinessBatch) {
      return invalid_argument(
          fmt::format("count: {} is not in 1..{}", count, kMaxBusinessBatch));
    }
    v1::NextBusinessIdsRequest request;
    request.set_tag(std::string(tag));
    request.set_count(count);
    request.set_agent(options_.agent);
    // The endpoints from one drawn at random, each asked once.
    thread_local std::minstd_rand random{std::random_device{}()};
    const std::size_t first = std::uniform_int_distribution<std::size_t>(0, nodes_.size() - 1)(random);
    Error last{ErrorCode::kUnavailable, "no endpoint answered"};
    for (std::size_t i = 0; i < nodes_.size(); ++i) {
      const Node& node = nodes_[(first + i) % nodes_.size()];
      calls_.fetch_add(1, std::memory_order_relaxed);
      grpc::ClientContext context;
      context.set_deadline(std::chrono::system_clock::now() + options_.call_deadline);
      if (!options_.bearer_token.empty()) {
        context.AddMetadata("authorization", "Bearer " + options_.bearer_token);
      }
      v1::NextBusinessIdsResponse response;
      grpc::Status status = node.stub->NextBusinessIds(&context, request, &response);
      if (status.ok()) {
        const std::string why = why_invalid_business(response.ids(), count);
        if (why.empty()) {
          out.insert(out.end(), response.ids().begin(), response.ids().end());
          return {};
        }
        invalid_answers_.fetch_add(1, std::memory_order_relaxed);
        status = grpc::Status(grpc::StatusCode::DATA_LOSS, "an answer discarded: " + why);
      } else if (over_receive_limit(status)) {
        // An answer too large to be one of count IDs: the endpoint's fault.
        invalid_answers_.fetch_add(1, std::memory_order_relaxed);
        status = grpc::Status(grpc::StatusCode::DATA_LOSS, status.error_message());
      }
      failed_calls_.fetch_add(1, std::memory_order_relaxed);
      const std::string message =
          fmt::format("{}: {} (gRPC status {})", node.target, status.error_message(),
                      static_cast<int>(status.error_code()));
      if (status.error_code() == grpc::StatusCode::FAILED_PRECONDITION) {
        return Error{ErrorCode::kFailedPrecondition, message};
      }
      if (classify(status.error_code()) != Failure::kNode) return refusal(status, message);
      last = Error{ErrorCode::kUnavailable, message};
    }
    return last;
  }

  ClientStats stats() const override {
    ClientStats stats;
    stats.calls = calls_.load(std::memory_order_relaxed);
    stats.failed_calls = failed_calls_.load(std::memory_order_relaxed);
    stats.invalid_answers = invalid_answers_.load(std::memory_order_relaxed);
    stats.ids_received = ids_received_.load(std::memory_order_relaxed);
    // Served: positions taken off the rings but the expired ones (the hot
    // path counts nothing of its own).
    const auto count = [&stats](const Buffer& buffer) {
      const std::uint64_t expired = buffer.expired.load(std::memory_order_relaxed);
      stats.ids_expired += expired;
      stats.ids_served += buffer.ring.taken() - expired;
    };
    count(snowflake_);
    std::shared_lock lock(tags_mutex_);
    for (const auto& [tag, buffer] : tags_) count(*buffer);
    return stats;
  }

 private:
  // The hot path: one ring take (a few atomic operations) and a coarse clock
  // read; the wait only when the ring is empty.
  Result<std::int64_t> take(Buffer& buffer) {
    std::int64_t id = 0;
    if (take_fresh(buffer, coarse_now_ns(), id)) return id;
    return wait_and_take(buffer);
  }

  // Takes IDs until one has not expired at `now`; false once the ring is
  // empty. Expired IDs are dropped, never handed out.
  bool take_fresh(Buffer& buffer, std::int64_t now, std::int64_t& id) {
    std::int64_t expires = 0;
    std::uint64_t position = 0;
    while (buffer.ring.take(id, expires, position)) {
      if (position == buffer.refill_trigger.load(std::memory_order_relaxed)) wake_refill();
      if (expires > now) return true;
      buffer.expired.fetch_add(1, std::memory_order_relaxed);
    }
    return false;
  }

  void wake_refill() {
    {
      std::lock_guard lock(mutex_);
      wake_ = true;
    }
    work_.notify_one();
  }

  // The slow path: wakes the refill thread and waits for news (a batch put
  // or an error recorded) until empty_wait has passed (start_wait before
  // the buffer's first batch).
  Result<std::int64_t> wait_and_take(Buffer& buffer) {
    const milliseconds wait = buffer.filled.load(std::memory_order_acquire)
                                  ? options_.empty_wait
                                  : std::max(options_.empty_wait, options_.start_wait);
    const auto deadline = steady_clock::now() + wait;
    for (;;) {
      std::uint64_t seen = 0;
      {
        std::lock_guard lock(mutex_);
        seen = news_;
      }
      std::int64_t id = 0;
      if (take_fresh(buffer, coarse_now_ns(), id)) return id;
      std::unique_lock lock(mutex_);
      if (buffer.refused && buffer.error) return *buffer.error;
      wake_ = true;
      work_.notify_one();
      const bool news = news_cv_.wait_until(lock, deadline, [&] { return news_ != seen; });
      if (!news) {
        if (buffer.error) return *buffer.error;
        return Error{ErrorCode::kUnavailable,
                     fmt::format("no ID{} buffered and none fetched within {} ms",
                                 buffer.tag.empty() ? "" : " for tag '" + buffer.tag + "'",
                                 wait.count())};
      }
    }
  }

  Buffer& buffer_for(std::string_view tag) {
    {
      std::shared_lock lock(tags_mutex_);
      const auto it = tags_.find(tag);
      if (it != tags_.end()) return *it->second;
    }
    std::unique_lock lock(tags_mutex_);
    auto& slot = tags_[std::string(tag)];
    if (!slot) slot = std::make_unique<Buffer>(std::string(tag), capacity_, options_.initial_batch);
    return *slot;
  }

  std::size_t low_water(const Buffer& buffer) const {
    return std::max<std::size_t>(1, static_cast<std::size_t>(options_.low_water * buffer.batch));
  }

  // Refill thread ------------------------------------------------------------

  void refill_loop() {
    for (;;) {
      {
        std::lock_guard lock(mutex_);
        if (stopping_) return;
        wake_ = false;
      }
      std::vector<Buffer*> buffers{&snowflake_};
      {
        std::shared_lock lock(tags_mutex_);
        for (auto& [tag, buffer] : tags_) buffers.push_back(buffer.get());
      }
      auto wake_at = steady_clock::now() + options_.refill_period;
      for (Buffer* buffer : buffers) {
        drop_expired(*buffer);
        refill(*buffer, wake_at);
        std::int64_t expires = 0;
        if (buffer->ring.oldest_expires(expires) && expires != kNeverExpires) {
          // Past the expiry by a coarse tick, or the coarse clock may not
          // show it yet and the loop would spin.
          wake_at = std::min(wake_at, steady_clock::time_point(nanoseconds(expires)) + kCoarseTick);
        }
      }
      std::unique_lock lock(mutex_);
      work_.wait_until(lock, wake_at, [this] { return wake_ || stopping_; });
    }
  }

  // Takes expired IDs off the head so that a caller never walks through a
  // ring of stale ones.
  void drop_expired(Buffer& buffer) {
    std::int64_t expires = 0;
    std::int64_t id = 0;
    std::uint64_t position = 0;
    // A caller may take the expired head first; this take then drops a
    // fresher ID, which costs an ID, never uniqueness.
    while (buffer.ring.oldest_expires(expires) && expires <= coarse_now_ns()) {
      if (!buffer.ring.take(id, expires, position)) break;
      buffer.expired.fetch_add(1, std::memory_order_relaxed);  // dropped unissued, fresh or not
    }
  }

  // Fetches batches until the buffer is above its low-water mark, the
  // endpoints all failed or the nodes refuse; `wake_at` is brought forward
  // to when a backoff or refusal ends.
  void refill(Buffer& buffer, steady_clock::time_point& wake_at) {
    while (buffer.ring.size() < low_water(buffer)) {
      const auto now = steady_clock::now();
      if (now < buffer.refused_until) {
        wake_at = std::min(wake_at, buffer.refused_until);
        return;
      }
      const std::size_t room = buffer.ring.capacity() - buffer.ring.size();
      const auto count = static_cast<std::uint32_t>(std::min<std::size_t>(buffer.batch, room));
      if (count == 0) return;
      if (!fetch(buffer, count, wake_at)) return;
    }
  }

  // One batch from the first endpoint that answers, in an order drawn at
  // random for this fetch, skipping those backing off; false if none did.
  // A refusal is this request's, not the node's: the next endpoint is asked
  // and the refusing one does not back off.
  bool fetch(Buffer& buffer, std::uint32_t count, steady_clock::time_point& wake_at) {
    std::shuffle(order_.begin(), order_.end(), random_);
    for (const std::size_t index : order_) {
      Node& node = nodes_[index];
      const auto now = steady_clock::now();
      if (node.retry_at > now) continue;
      const std::int64_t expires = buffer.tag.empty()
                                       ? coarse_now_ns() + nanoseconds(options_.max_age).count()
                                       : kNeverExpires;
      Answered answered;
      grpc::Status status = call(node, buffer.tag, count, answered);
      {
        std::lock_guard lock(mutex_);
        if (stopping_) return false;
      }
      if (status.ok()) {
        const std::string why =
            why_invalid(answered.ids, count, node.marks.last(buffer.tag, answered.issuer));
        if (why.empty()) {
          node.backoff = milliseconds{0};
          node.marks.set(buffer.tag, answered.issuer, answered.ids.back());
          put(buffer, answered.ids, expires, now);
          return true;
        }
        // Discarded whole; the endpoint fails as one that did not answer.
        invalid_answers_.fetch_add(1, std::memory_order_relaxed);
        status = grpc::Status(grpc::StatusCode::DATA_LOSS, "an answer discarded: " + why);
      }
      failed_calls_.fetch_add(1, std::memory_order_relaxed);
      const std::string message =
          fmt::format("{}: {} (gRPC status {})", node.target, status.error_message(),
                      static_cast<int>(status.error_code()));
      Failure failure = classify(status.error_code());
      if (failure == Failure::kTooLarge &&
          (count <= 1 || over_receive_limit(status) || !count_above_max_batch(status))) {
        // An answer above the channel's receive limit (max_batch fixed64
        // IDs and framing), or "too large" for a single ID: not a batch
        // size to halve, an endpoint that fails.
        invalid_answers_.fetch_add(1, std::memory_order_relaxed);
        failure = Failure::kNode;
      }
      switch (failure) {
        case Failure::kTooLarge:
          // Above the server's max_batch: ask for half, and never more again.
          buffer.batch_cap = std::max<std::uint32_t>(1, count / 2);
          buffer.batch = std::min(buffer.batch, buffer.batch_cap);
          return true;
        case Failure::kRefused:
          record_error(buffer, refusal(status, message), true);
          buffer.refused_until = now + options_.backoff_max;
          break;
        case Failure::kNode:
          record_error(buffer, Error{ErrorCode::kUnavailable, message}, false);
          node.backoff = node.backoff.count() == 0
                             ? options_.backoff_initial
                             : std::min(options_.backoff_max, node.backoff * 2);
          node.retry_at = now + jittered(node.backoff);
          break;
      }
    }
    // Nobody answered: wake when the first backoff ends.
    for (const Node& node : nodes_) {
      if (node.retry_at > steady_clock::now()) wake_at = std::min(wake_at, node.retry_at);
    }
    return false;
  }

  // Between half and all of `backoff`: clients that saw a node fail
  // together do not all come back at the same instant.
  milliseconds jittered(milliseconds backoff) {
    std::uniform_int_distribution<std::int64_t> half_to_all(backoff.count() / 2, backoff.count());
    return milliseconds{half_to_all(random_)};
  }

  static Error refusal(const grpc::Status& status, const std::string& message) {
    if (status.error_code() == grpc::StatusCode::NOT_FOUND) {
      return Error{ErrorCode::kNotFound, message};
    }
    return invalid_argument(message);
  }

  grpc::Status call(Node& node, const std::string& tag, std::uint32_t count, Answered& answered) {
    std::vector<std::int64_t>& ids = answered.ids;
    calls_.fetch_add(1, std::memory_order_relaxed);
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + options_.call_deadline);
    if (!options_.bearer_token.empty()) {
      context.AddMetadata("authorization", "Bearer " + options_.bearer_token);
    }
    {
      std::lock_guard lock(mutex_);
      if (stopping_) return grpc::Status::CANCELLED;
      in_flight_ = &context;
    }
    grpc::Status status;
    if (tag.empty()) {
      v1::NextIdsRequest request;
      request.set_count(count);
      request.set_agent(options_.agent);
      v1::NextIdsResponse response;
      status = node.stub->NextIds(&context, request, &response);
      ids.assign(response.ids().begin(), response.ids().end());
    } else {
      v1::NextSegmentIdsRequest request;
      request.set_tag(tag);
      request.set_count(count);
      request.set_agent(options_.agent);
      v1::NextSegmentIdsResponse response;
      status = node.stub->NextSegmentIds(&context, request, &response);
      ids.assign(response.ids().begin(), response.ids().end());
    }
    if (status.ok()) {
      const auto& metadata = context.GetServerInitialMetadata();
      if (const auto it = metadata.find("snowid-issuer"); it != metadata.end()) {
        // At most 64 bytes kept: a token is 16.
        answered.issuer.assign(it->second.data(), std::min<std::size_t>(it->second.size(), 64));
      }
    }
    std::lock_guard lock(mutex_);
    in_flight_ = nullptr;
    return status;
  }

  // Puts a fetched batch in the ring, arms the refill trigger, adapts the
  // batch size to the rate of refills and tells waiting callers.
  void put(Buffer& buffer, const std::vector<std::int64_t>& ids, std::int64_t expires,
           steady_clock::time_point started) {
    for (const std::int64_t id : ids) {
      // Cannot fail: the batch was sized to the room left, and only this
      // thread puts.
      if (!buffer.ring.put(id, expires)) break;
    }
    if (buffer.last_refill) {
      const auto since = started - *buffer.last_refill;
      if (since < options_.refill_period / 2) {
        buffer.batch = std::min({options_.max_batch, buffer.batch_cap, buffer.batch * 2});
      } else if (since > options_.refill_period * 2) {
        buffer.batch = std::max(options_.initial_batch, buffer.batch / 2);
      }
    }
    buffer.last_refill = started;
    buffer.refused_until = {};
    ids_received_.fetch_add(ids.size(), std::memory_order_relaxed);
    buffer.filled.store(true, std::memory_order_release);
    const std::uint64_t tail = buffer.ring.tail();
    const std::size_t low = low_water(buffer);
    buffer.refill_trigger.store(tail > low ? tail - low : 0, std::memory_order_relaxed);
    {
      std::lock_guard lock(mutex_);
      buffer.error.reset();
      buffer.refused = false;
      ++news_;
    }
    news_cv_.notify_all();
  }

  void record_error(Buffer& buffer, Error error, bool refused) {
    {
      std::lock_guard lock(mutex_);
      buffer.error = std::move(error);
      buffer.refused = refused;
      ++news_;
    }
    news_cv_.notify_all();
  }

  const ClientOptions options_;
  const std::size_t capacity_;
  Buffer snowflake_;
  mutable std::shared_mutex tags_mutex_;  // guards the map; buffers never move or go
  std::map<std::string, std::unique_ptr<Buffer>, std::less<>> tags_;
  std::vector<Node> nodes_;  // fixed after construction
  // Refill thread only: the order of the endpoints, drawn again at every
  // fetch, and the generator that draws it and the backoffs' jitter.
  std::vector<std::size_t> order_;
  std::minstd_rand random_{std::random_device{}()};

  std::mutex mutex_;
  std::condition_variable work_;     // the refill thread waits here
  std::condition_variable news_cv_;  // callers on an empty buffer wait here
  bool wake_ = false;
  bool stopping_ = false;
  std::uint64_t news_ = 0;
  grpc::ClientContext* in_flight_ = nullptr;
  std::atomic<std::uint64_t> calls_{0};
  std::atomic<std::uint64_t> invalid_answers_{0};
  std::atomic<std::uint64_t> failed_calls_{0};
  std::atomic<std::uint64_t> ids_received_{0};
  std::thread thread_;  // last: starts after everything above exists
};

Result<std::string> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  if (!in || !(text << in.rdbuf())) {
    return invalid_argument(fmt::format("root_ca_file: cannot read '{}'", path));
  }
  return text.str();
}

}  // namespace

Status validate(const ClientOptions& options) {
  if (options.endpoints.empty()) return invalid_argument("endpoints: at least one is needed");
  for (const std::string& endpoint : options.endpoints) {
    if (!valid_endpoint(endpoint)) {
      return invalid_argument(
          fmt::format("endpoints: '{}' is not HOST:PORT or [IPV6]:PORT", endpoint));
    }
  }
  if (!options.agent.empty() && !valid_name(options.agent, "-", 64)) {
    return invalid_argument(fmt::format(
        "agent: '{}' is not [a-zA-Z][a-zA-Z0-9-]* of at most 64 characters", options.agent));
  }
  if (options.bearer_token.find_first_of("\r\n") != std::string::npos) {
    return invalid_argument("bearer_token: must not hold a line break");
  }
  if (!options.root_ca_file.empty() && !options.tls) {
    return invalid_argument("root_ca_file: set, but tls is off");
  }
  if (options.call_deadline <= milliseconds{0}) {
    return invalid_argument("call_deadline: must be above 0 ms");
  }
  if (options.empty_wait < milliseconds{0}) {
    return invalid_argument("empty_wait: must not be negative");
  }
  if (options.start_wait < milliseconds{0}) {
    return invalid_argument("start_wait: must not be negative");
  }
  if (!(options.low_water > 0.0 && options.low_water <= 1.0)) {
    return invalid_argument(fmt::format("low_water: {} is not in (0, 1]", options.low_water));
  }
  if (options.initial_batch == 0) return invalid_argument("initial_batch: must be at least 1");
  if (options.max_batch < options.initial_batch || options.max_batch > kMaxBatchLimit) {
    return invalid_argument(fmt::format("max_batch: {} is not in [initial_batch ({}), {}]",
                                        options.max_batch, options.initial_batch, kMaxBatchLimit));
  }
  if (options.refill_period <= milliseconds{0}) {
    return invalid_argument("refill_period: must be above 0 ms");
  }
  if (options.max_age < milliseconds{10}) {
    return invalid_argument("max_age: must be at least 10 ms");
  }
  if (options.backoff_initial <= milliseconds{0} || options.backoff_max < options.backoff_initial) {
    return invalid_argument("backoff: need 0 ms < backoff_initial <= backoff_max");
  }
  return {};
}

Result<std::unique_ptr<Client>> Client::open(const ClientOptions& options) {
  if (Status valid = validate(options); !valid.ok()) return valid.error();
  std::shared_ptr<grpc::ChannelCredentials> credentials = grpc::InsecureChannelCredentials();
  if (options.tls) {
    grpc::SslCredentialsOptions ssl;
    if (!options.root_ca_file.empty()) {
      auto roots = read_file(options.root_ca_file);
      if (!roots.ok()) return roots.error();
      ssl.pem_root_certs = std::move(*roots);
    }
    credentials = grpc::SslCredentials(ssl);
  }
  return std::unique_ptr<Client>(new GrpcClient(options, std::move(credentials)));
}

}  // namespace snowid
