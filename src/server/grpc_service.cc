#include "grpc_service.h"

#include <fmt/format.h>
#include <grpcpp/grpcpp.h>


#include "snowid/decode.h"
#include "text_file.h"
#include "snowid/v1/snowid.grpc.pb.h"

namespace snowid::server {
namespace {

namespace v1 = ::snowid::v1;

constexpr int kMaxGrpcRequestBytes = 64 * 1024;
constexpr int kMaxGrpcStreamsPerConnection = 1000;

grpc::Status refusal(const Error& error) {
  return grpc::Status(is_transient(error) ? grpc::StatusCode::UNAVAILABLE : grpc::StatusCode::INTERNAL,
                      error.message);
}

class Handlers final : public v1::IdService::CallbackService {
 public:
  explicit Handlers(IdService& service) : service_(service) {}

  grpc::ServerUnaryReactor* NextId(grpc::CallbackServerContext* context,
                                   const v1::NextIdRequest* request,
                                   v1::NextIdResponse* response) override {
    auto* reactor = context->DefaultReactor();
    reactor->Finish(issue(context, 1, request->agent(), [response](Id id) {
      response->set_id(static_cast<std::uint64_t>(id));
    }));
    return reactor;
  }

  grpc::ServerUnaryReactor* NextIds(grpc::CallbackServerContext* context,
                                    const v1::NextIdsRequest* request,
                                    v1::NextIdsResponse* response) override {
    auto* reactor = context->DefaultReactor();
    if (grpc::Status counted = check_count(request->count()); !counted.ok()) {
      reactor->Finish(counted);
    } else {
      response->mutable_ids()->Reserve(static_cast<int>(request->count()));
      reactor->Finish(issue(context, request->count(), request->agent(), [response](Id id) {
        response->add_ids(static_cast<std::uint64_t>(id));
      }));
    }
    return reactor;
  }

  grpc::ServerUnaryReactor* Decode(grpc::CallbackServerContext* context,
                                   const v1::DecodeRequest* request,
                                   v1::DecodeResponse* response) override {
    auto* reactor = context->DefaultReactor();
    grpc::Status status = authorize(context);
    if (status.ok()) {
      if (request->id() > static_cast<std::uint64_t>(std::numeric_limits<Id>::max())) {
        status = grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                              fmt::format("ID {} exceeds 2^63-1", request->id()));
      } else {
        const auto id = static_cast<Id>(request->id());
        auto fields = decode(service_.layout(), id);
        if (!fields.ok()) {
          status = grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, fields.error().message);
        } else {
          response->set_id(request->id());
          response->set_timestamp_ms(fields->timestamp.count());
          response->set_time(format_time(fields->timestamp));
          response->set_datacenter(fields->datacenter);
          response->set_worker(fields->worker);
          response->set_sequence(fields->sequence);
        }
      }
    }
    reactor->Finish(status);
    return reactor;
  }

  grpc::ServerUnaryReactor* Info(grpc::CallbackServerContext* context, const v1::InfoRequest*,
                                 v1::InfoResponse* response) override {
    auto* reactor = context->DefaultReactor();
    grpc::Status status = authorize(context);
    if (status.ok()) {
      const auto info = service_.info();
      response->set_version(kVersion);
      response->set_layout(describe(service_.layout()));
      response->set_datacenter_id(info["datacenter_id"].get<std::uint64_t>());
      response->set_worker_id(info["worker_id"].get<std::uint64_t>());
      response->set_clock_policy(info["clock_policy"].get<std::string>());
      response->set_high_water_ms(info["high_water_ms"].get<std::int64_t>());
      response->set_ids_issued(info["ids_issued"].get<std::uint64_t>());
      response->set_uptime_seconds(info["uptime_seconds"].get<double>());
      response->set_info_json(info.dump());
    }
    reactor->Finish(status);
    return reactor;
  }

  // May wait for the segment store (up to segment_request_timeout_ms) when
  // the tag's buffers are empty; in steady state the prefetch avoids that.
  grpc::ServerUnaryReactor* NextSegmentIds(grpc::CallbackServerContext* context,
                                           const v1::NextSegmentIdsRequest* request,
                                           v1::NextSegmentIdsResponse* response) override {
    auto* reactor = context->DefaultReactor();
    reactor->Finish(next_segment_ids(context, *request, *response));
    return reactor;
  }

 private:
  grpc::Status next_segment_ids(grpc::CallbackServerContext* context,
                                const v1::NextSegmentIdsRequest& request,
                                v1::NextSegmentIdsResponse& response) {
    grpc::Status status = authorize(context);
    if (!status.ok()) return status;
    status = check_agent(request.agent());
    if (!status.ok()) return status;
    SegmentAllocator* segments = service_.segments();
    if (segments == nullptr) {
      return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION, "segment mode is off");
    }
    status = check_count(request.count());
    if (!status.ok()) return status;
    thread_local std::vector<std::int64_t> numbers;
    numbers.clear();
    Status issued = segments->next(request.tag(), request.count(), numbers);
    if (!issued.ok()) {
      const Error& error = issued.error();
      grpc::StatusCode code = grpc::StatusCode::INTERNAL;
      if (error.code == ErrorCode::kInvalidArgument) code = grpc::StatusCode::INVALID_ARGUMENT;
      if (error.code == ErrorCode::kNotFound) code = grpc::StatusCode::NOT_FOUND;
      if (error.code == ErrorCode::kUnavailable) code = grpc::StatusCode::UNAVAILABLE;
      return grpc::Status(code, error.message);
    }
    response.mutable_ids()->Add(numbers.begin(), numbers.end());
    return grpc::Status::OK;
  }

  // INVALID_ARGUMENT for 0, RESOURCE_EXHAUSTED above max_batch.
  grpc::Status check_count(std::uint32_t count) const {
    const std::uint32_t max = service_.config().max_batch;
    if (count == 0) {
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                          fmt::format("count must be between 1 and {}", max));
    }
    if (count > max) {
      return grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED,
                          fmt::format("count {} exceeds max_batch {}", count, max));
    }
    return grpc::Status::OK;
  }

  static grpc::Status check_agent(const std::string& agent) {
    if (!agent.empty() && !valid_agent(agent)) {
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                          "agent must match [a-zA-Z][a-zA-Z0-9-]* and be at most 64 characters");
    }
    return grpc::Status::OK;
  }

  grpc::Status authorize(grpc::CallbackServerContext* context) const {
    const std::string& token = service_.config().bearer_token;
    if (token.empty()) return grpc::Status::OK;
    const auto& metadata = context->client_metadata();
    const auto it = metadata.find("authorization");
    if (it == metadata.end() ||
        std::string_view(it->second.data(), it->second.size()) != "Bearer " + token) {
      return grpc::Status(grpc::StatusCode::UNAUTHENTICATED, "a valid bearer token is required");
    }
    return grpc::Status::OK;
  }

  template <typename Sink>
  grpc::Status issue(grpc::CallbackServerContext* context, std::uint32_t count,
                     const std::string& agent, Sink&& sink) {
    grpc::Status status = authorize(context);
    if (!status.ok()) return status;
    status = check_agent(agent);
    if (!status.ok()) return status;
    thread_local std::vector<Id> ids;
    ids.clear();
    Status issued = service_.issue(count, agent, ids);
    if (!issued.ok()) return refusal(issued.error());
    for (Id id : ids) sink(id);
    return grpc::Status::OK;
  }

  IdService& service_;
};

}  // namespace

struct GrpcServer::Impl {
  explicit Impl(IdService& id_service) : service(id_service), handlers(id_service) {}
  IdService& service;
  Handlers handlers;
  std::unique_ptr<grpc::Server> server;
};

GrpcServer::GrpcServer(IdService& service) : impl_(std::make_unique<Impl>(service)) {}

GrpcServer::~GrpcServer() { shutdown(std::chrono::milliseconds{0}); }

Result<Endpoint> GrpcServer::start() {
  const ServerConfig& config = impl_->service.config();
  std::shared_ptr<grpc::ServerCredentials> credentials = grpc::InsecureServerCredentials();
  if (!config.tls_cert.empty()) {
    grpc::SslServerCredentialsOptions tls;
    grpc::SslServerCredentialsOptions::PemKeyCertPair pair;
    auto cert = read_text_file(config.tls_cert, "tls_cert");
    if (!cert.ok()) return cert.error();
    auto key = read_text_file(config.tls_key, "tls_key");
    if (!key.ok()) return key.error();
    pair.cert_chain = std::move(*cert);
    pair.private_key = std::move(*key);
    tls.pem_key_cert_pairs.push_back(std::move(pair));
    credentials = grpc::SslServerCredentials(tls);
  }
  int port = 0;
  grpc::ServerBuilder builder;
  builder.AddListeningPort(config.grpc.text(), credentials, &port);
  // Requests are a few bytes; anything large is a mistake or an attack.
  builder.SetMaxReceiveMessageSize(kMaxGrpcRequestBytes);
  builder.AddChannelArgument(GRPC_ARG_MAX_CONCURRENT_STREAMS, kMaxGrpcStreamsPerConnection);
  builder.RegisterService(&impl_->handlers);
  impl_->server = builder.BuildAndStart();
  if (!impl_->server || port == 0) {
    impl_->server.reset();
    return Error{ErrorCode::kUnavailable,
                 fmt::format("grpc: cannot listen on {}", config.grpc.text())};
  }
  return Endpoint{config.grpc.host, static_cast<std::uint16_t>(port)};
}

void GrpcServer::shutdown(std::chrono::milliseconds grace) {
  if (!impl_->server) return;
  impl_->server->Shutdown(std::chrono::system_clock::now() + grace);
  impl_->server->Wait();
  impl_->server.reset();
}

}  // namespace snowid::server
