#include "grpc_bench.h"

#include <fmt/format.h>
#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <vector>

#include "grpc_runtime.h"
#include "snowid/v1/snowid.grpc.pb.h"
#include "text_file.h"

namespace snowid::cli {
namespace {

namespace v1 = ::snowid::v1;
using Clock = std::chrono::steady_clock;

constexpr std::chrono::seconds kCallDeadline{10};

std::string status_name(grpc::StatusCode code) {
  switch (code) {
    case grpc::StatusCode::CANCELLED: return "CANCELLED";
    case grpc::StatusCode::INVALID_ARGUMENT: return "INVALID_ARGUMENT";
    case grpc::StatusCode::DEADLINE_EXCEEDED: return "DEADLINE_EXCEEDED";
    case grpc::StatusCode::RESOURCE_EXHAUSTED: return "RESOURCE_EXHAUSTED";
    case grpc::StatusCode::INTERNAL: return "INTERNAL";
    case grpc::StatusCode::UNAVAILABLE: return "UNAVAILABLE";
    case grpc::StatusCode::UNAUTHENTICATED: return "UNAUTHENTICATED";
    default: return fmt::format("code {}", static_cast<int>(code));
  }
}

// Counts down the call loops still running.
class Countdown {
 public:
  explicit Countdown(int count) : count_(count) {}
  void done() {
    std::lock_guard lock(mutex_);
    if (--count_ == 0) all_done_.notify_all();
  }
  void wait() {
    std::unique_lock lock(mutex_);
    all_done_.wait(lock, [this] { return count_ == 0; });
  }

 private:
  std::mutex mutex_;
  std::condition_variable all_done_;
  int count_;
};

// One call in flight at a time: each completion records its result and starts
// the next call until the end time. Its fields are touched by one callback at
// a time (a call starts only after the previous one completed), so they need
// no lock; the countdown publishes them to the reporting thread.
// What one loop of calls received.
struct LoopResults {
  std::uint64_t calls_ok = 0;
  std::uint64_t ids = 0;
  std::map<std::string, std::uint64_t> failures;
  std::vector<std::int64_t> latencies_ns;
  std::vector<std::uint64_t> received;
};

class CallLoop : public LoopResults {
 public:
  CallLoop(v1::IdService::Stub& stub, const GrpcBenchOptions& options, Clock::time_point end,
           Countdown& countdown)
      : stub_(stub), options_(options), end_(end), countdown_(countdown) {
    many_request_.set_count(options.batch);
  }

  void start_call() {
    context_ = std::make_unique<grpc::ClientContext>();
    context_->set_deadline(std::chrono::system_clock::now() + kCallDeadline);
    if (!options_.bearer_token.empty()) {
      context_->AddMetadata("authorization", "Bearer " + options_.bearer_token);
    }
    begin_ = Clock::now();
    if (options_.batch == 0) {
      stub_.async()->NextId(context_.get(), &one_request_, &one_response_,
                            [this](grpc::Status status) { finish_call(status); });
    } else {
      stub_.async()->NextIds(context_.get(), &many_request_, &many_response_,
                             [this](grpc::Status status) { finish_call(status); });
    }
  }

 private:
  void finish_call(const grpc::Status& status) {
    const auto now = Clock::now();
    latencies_ns.push_back(std::chrono::duration_cast<std::chrono::nanoseconds>(now - begin_).count());
    if (status.ok()) {
      ++calls_ok;
      if (options_.batch == 0) {
        ++ids;
        if (options_.verify) received.push_back(one_response_.id());
      } else {
        ids += static_cast<std::uint64_t>(many_response_.ids_size());
        if (options_.verify) {
          received.insert(received.end(), many_response_.ids().begin(),
                          many_response_.ids().end());
        }
      }
    } else {
      ++failures[status_name(status.error_code())];
    }
    if (now < end_) return start_call();
    countdown_.done();
  }

  v1::IdService::Stub& stub_;
  const GrpcBenchOptions& options_;
  const Clock::time_point end_;
  Countdown& countdown_;
  std::unique_ptr<grpc::ClientContext> context_;
  Clock::time_point begin_;
  v1::NextIdRequest one_request_;
  v1::NextIdResponse one_response_;
  v1::NextIdsRequest many_request_;
  v1::NextIdsResponse many_response_;
};

// One StreamIds stream: writes a request for `batch` IDs, reads the answer,
// and again, until the end time; then ends its side and waits for the
// status. One operation is outstanding at a time.
class StreamLoop : public LoopResults,
                   public grpc::ClientBidiReactor<v1::NextIdsRequest, v1::NextIdsResponse> {
 public:
  StreamLoop(v1::IdService::Stub& stub, const GrpcBenchOptions& options, Clock::time_point end,
             Countdown& countdown)
      : options_(options), end_(end), countdown_(countdown) {
    request_.set_count(options.batch);
    if (!options.bearer_token.empty()) {
      context_.AddMetadata("authorization", "Bearer " + options.bearer_token);
    }
    stub.async()->StreamIds(&context_, this);
  }
  void start() {
    write();
    StartCall();
  }
  void OnWriteDone(bool ok) override {
    if (ok) StartRead(&response_);
  }
  void OnReadDone(bool ok) override {
    if (!ok) return;  // the stream ended: OnDone has its status
    latencies_ns.push_back(
        std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - begin_).count());
    ++calls_ok;
    ids += static_cast<std::uint64_t>(response_.ids_size());
    if (options_.verify)
      received.insert(received.end(), response_.ids().begin(), response_.ids().end());
    if (Clock::now() < end_) return write();
    StartWritesDone();
  }
  void OnDone(const grpc::Status& status) override {
    if (!status.ok()) ++failures[status_name(status.error_code())];
    countdown_.done();
  }

 private:
  void write() {
    begin_ = Clock::now();
    StartWrite(&request_);
  }

  const GrpcBenchOptions& options_;
  const Clock::time_point end_;
  Countdown& countdown_;
  grpc::ClientContext context_;
  Clock::time_point begin_;
  v1::NextIdsRequest request_;
  v1::NextIdsResponse response_;
};

Result<std::shared_ptr<grpc::ChannelCredentials>> credentials(const GrpcBenchOptions& options) {
  if (options.tls_ca_file.empty()) return grpc::InsecureChannelCredentials();
  auto pem = read_text_file(options.tls_ca_file, "--tls-ca");
  if (!pem.ok()) return pem.error();
  grpc::SslCredentialsOptions tls;
  tls.pem_root_certs = std::move(*pem);
  return grpc::SslCredentials(tls);
}

// Ok once `channel` is connected. kUnavailable, at the first failed
// attempt rather than after retries, if nothing at `target` completes a
// connection (refused, a handshake failed) or none completes within 5 s.
Status wait_until_connected(grpc::Channel& channel, const std::string& target) {
  const auto deadline = std::chrono::system_clock::now() + std::chrono::seconds{5};
  for (grpc_connectivity_state state = channel.GetState(true); state != GRPC_CHANNEL_READY;
       state = channel.GetState(true)) {
    if (state == GRPC_CHANNEL_TRANSIENT_FAILURE || state == GRPC_CHANNEL_SHUTDOWN ||
        !channel.WaitForStateChange(state, deadline)) {
      return Error{ErrorCode::kUnavailable,
                   fmt::format("cannot connect to {}: nothing serves gRPC there (is snowidd "
                               "running there, with grpc not set to \"off\"?)",
                               target)};
    }
  }
  return {};
}

}  // namespace

Result<GrpcBenchReport> run_grpc_bench(const GrpcBenchOptions& options) {
  if (options.concurrency < 1 || options.concurrency > 10000) {
    return invalid_argument("--concurrency must be in 1..10000");
  }
  if (options.stream && options.batch == 0) {
    return invalid_argument(
        "--stream needs --batch N: the IDs each message on the stream asks for");
  }
  if (options.channels < 1 || options.channels > options.concurrency) {
    return invalid_argument("--channels must be in 1..concurrency");
  }
  // snowidd holds at most 100 calls per connection and a stream stays open
  // for the whole run: streams beyond that would wait for the run's end.
  constexpr int kCallsPerConnection = 100;
  if (options.stream &&
      (options.concurrency + options.channels - 1) / options.channels > kCallsPerConnection) {
    return invalid_argument(fmt::format(
        "--stream: {} streams on {} channels is more than snowidd's {} calls per connection; "
        "use --channels {} or more",
        options.concurrency, options.channels, kCallsPerConnection,
        (options.concurrency + kCallsPerConnection - 1) / kCallsPerConnection));
  }
  if (options.duration.count() < 1) return invalid_argument("--duration must be positive");
  auto creds = credentials(options);
  if (!creds.ok()) return creds.error();

  disable_grpc_lock_order_checks();
  std::vector<std::unique_ptr<v1::IdService::Stub>> stubs;
  for (int i = 0; i < options.channels; ++i) {
    grpc::ChannelArguments arguments;
    // A connection of its own per channel, rather than one shared subchannel.
    arguments.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
    auto channel = grpc::CreateCustomChannel(options.target, *creds, arguments);
    if (Status connected = wait_until_connected(*channel, options.target); !connected.ok()) {
      return connected.error();
    }
    stubs.push_back(v1::IdService::NewStub(channel));
  }

  Countdown countdown(options.concurrency);
  const auto begin = Clock::now();
  const auto end = begin + options.duration;
  std::vector<std::unique_ptr<CallLoop>> call_loops;
  std::vector<std::unique_ptr<StreamLoop>> stream_loops;
  std::vector<const LoopResults*> loops;
  for (int i = 0; i < options.concurrency; ++i) {
    auto& stub = *stubs[static_cast<std::size_t>(i % options.channels)];
    if (options.stream) {
      loops.push_back(
          stream_loops.emplace_back(std::make_unique<StreamLoop>(stub, options, end, countdown))
              .get());
    } else {
      loops.push_back(
          call_loops.emplace_back(std::make_unique<CallLoop>(stub, options, end, countdown)).get());
    }
  }
  for (auto& loop : call_loops) loop->start_call();
  for (auto& loop : stream_loops) loop->start();
  countdown.wait();

  GrpcBenchReport report;
  report.elapsed = Clock::now() - begin;
  std::vector<std::int64_t> latencies;
  std::vector<std::uint64_t> received;
  for (const LoopResults* loop : loops) {
    report.calls_ok += loop->calls_ok;
    report.ids += loop->ids;
    for (const auto& [code, count] : loop->failures) report.failures[code] += count;
    latencies.insert(latencies.end(), loop->latencies_ns.begin(), loop->latencies_ns.end());
    received.insert(received.end(), loop->received.begin(), loop->received.end());
  }
  set_latencies(report, latencies);
  if (options.verify) report.duplicates = count_duplicates(received);
  return report;
}

std::string format_report(const GrpcBenchOptions& options, const GrpcBenchReport& report) {
  return fmt::format("target {}: {}, {} calls in flight on {} connections, {:.1f} s\n",
                     options.target,
                     options.batch == 0 ? std::string("NextId")
                     : options.stream   ? fmt::format("StreamIds({} per message)", options.batch)
                                        : fmt::format("NextIds({})", options.batch),
                     options.concurrency, options.channels, report.elapsed.count()) +
         format_load(report, options.verify);
}

}  // namespace snowid::cli
