// A gRPC server of snowid.v1.IdService/NextId alone, in two builds of the
// same handler, to measure what gRPC's API costs a unary call on this
// machine (bench/grpc_async.sh drives it):
//
//   --api callback  the callback API, as snowidd serves gRPC
//                   (src/server/grpc_service.cc): gRPC's own threads run
//                   the handler inline and answer with the default reactor.
//   --api async     the completion-queue API: one ServerCompletionQueue
//                   and one thread polling it per --threads, each queue
//                   keeping kPendingPerQueue calls requested, one CallData
//                   state machine per call.
//
// Both answer every call with an ID from a real snowid::Generator (the
// twitter layout, no state file), so the work per call besides gRPC is the
// generator's next(), as in snowidd; snowidd's service layer (token, agent
// and counters, about 5% of its server time per call) is left out of both.
// Other methods: UNIMPLEMENTED from the callback build; the async build
// never requests them, so such a call waits for its deadline. Runs until
// SIGINT or SIGTERM, then shuts down cleanly.
//
// Usage: snowid_grpc_async_server [--port N] [--api callback|async] [--threads N]
// Prints "listening 127.0.0.1:PORT" once it accepts calls (--port 0, the
// default, picks a free port).

#include <grpcpp/grpcpp.h>
#include <pthread.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "grpc_runtime.h"
#include "snowid/generator.h"
#include "snowid/v1/snowid.grpc.pb.h"

namespace snowid {
namespace {

namespace v1 = ::snowid::v1;

// As snowidd sets them (src/server/grpc_service.cc), so that each server
// runs gRPC's filter stack with the same limits.
constexpr int kMaxGrpcRequestBytes = 64 * 1024;
constexpr int kMaxGrpcStreamsPerConnection = 1000;
// Calls each completion queue keeps requested: more than the streams in
// flight on one queue, so that no arriving call waits for a request.
constexpr int kPendingPerQueue = 128;

// The ID of one call as a gRPC status and response.
grpc::Status answer(Generator& generator, v1::NextIdResponse& response) {
  auto id = generator.next();
  if (!id.ok()) return grpc::Status(grpc::StatusCode::UNAVAILABLE, id.error().message);
  response.set_id(static_cast<std::uint64_t>(*id));
  return grpc::Status::OK;
}

class CallbackHandlers final : public v1::IdService::CallbackService {
 public:
  explicit CallbackHandlers(Generator& generator) : generator_(generator) {}

  grpc::ServerUnaryReactor* NextId(grpc::CallbackServerContext* context,
                                   const v1::NextIdRequest* /*request*/,
                                   v1::NextIdResponse* response) override {
    auto* reactor = context->DefaultReactor();
    reactor->Finish(answer(generator_, *response));
    return reactor;
  }

 private:
  Generator& generator_;
};

// One NextId call on one completion queue: requested, then answered, then
// deleted. Its address is the tag of both events; only the thread polling
// `queue` touches it after construction, so it needs no lock.
class CallData {
 public:
  CallData(v1::IdService::AsyncService& service, grpc::ServerCompletionQueue& queue,
           Generator& generator)
      : service_(service), queue_(queue), generator_(generator), responder_(&context_) {
    service_.RequestNextId(&context_, &request_, &responder_, &queue_, &queue_, this);
  }

  // The queue's event for this call: `ok` false means the request was
  // cancelled by shutdown (before a call arrived) or the answer was not
  // sent; either way the call is over.
  void proceed(bool ok) {
    if (state_ == State::kFinishing || !ok) {
      delete this;
      return;
    }
    // A call arrived: keep the queue's count of requested calls, then answer inline.
    new CallData(service_, queue_, generator_);
    state_ = State::kFinishing;
    responder_.Finish(response_, answer(generator_, response_), this);
  }

 private:
  enum class State { kRequested, kFinishing };

  v1::IdService::AsyncService& service_;
  grpc::ServerCompletionQueue& queue_;
  Generator& generator_;
  grpc::ServerContext context_;
  v1::NextIdRequest request_;
  v1::NextIdResponse response_;
  grpc::ServerAsyncResponseWriter<v1::NextIdResponse> responder_;
  State state_ = State::kRequested;
};

// Polls one queue until it is shut down and drained.
void poll(grpc::ServerCompletionQueue& queue) {
  void* tag = nullptr;
  bool ok = false;
  while (queue.Next(&tag, &ok)) static_cast<CallData*>(tag)->proceed(ok);
}

struct Options {
  int port = 0;
  std::string api = "async";
  int threads = static_cast<int>(std::thread::hardware_concurrency());
};

[[noreturn]] void usage(const char* message) {
  std::fprintf(stderr, "snowid_grpc_async_server: %s\n", message);
  std::exit(2);
}

int parse_int(const char* text, const char* name, int low, int high) {
  char* end = nullptr;
  const long value = std::strtol(text, &end, 10);
  if (end == text || *end != '\0' || value < low || value > high) {
    usage((std::string(name) + " must be an integer in [" + std::to_string(low) + ", " +
           std::to_string(high) + "]")
              .c_str());
  }
  return static_cast<int>(value);
}

Options parse(int argc, char** argv) {
  Options options;
  for (int i = 1; i < argc; ++i) {
    const std::string_view flag = argv[i];
    if (i + 1 >= argc) usage(("missing value after " + std::string(flag)).c_str());
    const char* value = argv[++i];
    if (flag == "--port") {
      options.port = parse_int(value, "--port", 0, 65535);
    } else if (flag == "--threads") {
      options.threads = parse_int(value, "--threads", 1, 256);
    } else if (flag == "--api") {
      options.api = value;
      if (options.api != "async" && options.api != "callback") {
        usage("--api must be async or callback");
      }
    } else {
      usage(("unknown option " + std::string(flag)).c_str());
    }
  }
  if (options.threads < 1) options.threads = 1;
  return options;
}

}  // namespace
}  // namespace snowid

int main(int argc, char** argv) {
  using namespace snowid;
  // As snowidd does, before any gRPC object exists.
  disable_grpc_lock_order_checks();
  const Options options = parse(argc, argv);

  // SIGINT and SIGTERM are taken by sigwait below; every thread started
  // from here on, gRPC's included, inherits the mask.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

  auto generator = Generator::create(GeneratorOptions{});
  if (!generator.ok()) {
    std::fprintf(stderr, "snowid_grpc_async_server: %s\n", generator.error().message.c_str());
    return 1;
  }

  grpc::ServerBuilder builder;
  builder.SetMaxReceiveMessageSize(kMaxGrpcRequestBytes);
  builder.AddChannelArgument(GRPC_ARG_MAX_CONCURRENT_STREAMS, kMaxGrpcStreamsPerConnection);
  int port = 0;
  builder.AddListeningPort("127.0.0.1:" + std::to_string(options.port),
                           grpc::InsecureServerCredentials(), &port);
  CallbackHandlers callback_handlers(**generator);
  v1::IdService::AsyncService async_service;
  std::vector<std::unique_ptr<grpc::ServerCompletionQueue>> queues;
  const bool async = options.api == "async";
  if (async) {
    builder.RegisterService(&async_service);
    for (int i = 0; i < options.threads; ++i) queues.push_back(builder.AddCompletionQueue());
  } else {
    builder.RegisterService(&callback_handlers);
  }
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (!server || port == 0) {
    std::fprintf(stderr, "snowid_grpc_async_server: cannot listen on 127.0.0.1:%d\n", options.port);
    return 1;
  }

  std::vector<std::thread> pollers;
  for (auto& queue : queues) {
    for (int i = 0; i < kPendingPerQueue; ++i) new CallData(async_service, *queue, **generator);
    pollers.emplace_back([&queue] { poll(*queue); });
  }
  std::printf("listening 127.0.0.1:%d api %s threads %d\n", port, options.api.c_str(),
              async ? options.threads : 0);
  std::fflush(stdout);

  int signal = 0;
  sigwait(&stop_signals, &signal);
  // Shutdown first, so that no new call is matched to a request, then the
  // queues: each poller deletes what is left of its calls and returns.
  server->Shutdown();
  for (auto& queue : queues) queue->Shutdown();
  for (auto& poller : pollers) poller.join();
  return 0;
}
