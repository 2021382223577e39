#include "etcd_client.h"

#include <fmt/format.h>
#include <grpcpp/grpcpp.h>

#include <charconv>

#include "text_file.h"

namespace snowid {

Result<std::vector<std::string>> parse_etcd_endpoints(std::string_view list) {
  return coord::parse_host_port_list(list, "etcd", {"http://", "https://"});
}

}  // namespace snowid

namespace snowid::coord {

using std::chrono::microseconds;
using std::chrono::steady_clock;
using std::chrono::milliseconds;

struct EtcdClient::Member {
  std::string endpoint;
  std::shared_ptr<grpc::Channel> channel;
  std::unique_ptr<etcdserverpb::KV::Stub> kv;
  std::unique_ptr<etcdserverpb::Lease::Stub> lease;
  std::unique_ptr<etcdserverpb::Auth::Stub> auth;
  std::mutex token_mutex;
  std::string token;  // "" until authenticated (or without a user)
};

namespace {

// The least time a member that is not connected yet gets to connect and answer.
constexpr milliseconds kMinConnectBudget{300};

// The least time gRPC gives one connection attempt to a member (see connect()).
constexpr int kMinConnectAttemptMs = 5000;

bool is_unreachable(grpc::StatusCode code) {
  return code == grpc::StatusCode::UNAVAILABLE || code == grpc::StatusCode::DEADLINE_EXCEEDED;
}

// etcd answers a stale or unknown token with INVALID_ARGUMENT "etcdserver: invalid auth token".
bool is_token_refused(const grpc::Status& status) {
  return status.error_code() == grpc::StatusCode::UNAUTHENTICATED ||
         status.error_message().find("invalid auth token") != std::string::npos;
}

}  // namespace

EtcdClient::EtcdClient(const EtcdOptions& options) : options_(options) {}
EtcdClient::~EtcdClient() = default;

Result<std::unique_ptr<EtcdClient>> EtcdClient::connect(const EtcdOptions& options) {
  if (options.endpoints.empty()) return invalid_argument("no etcd endpoint given");
  for (const auto& endpoint : options.endpoints) {
    auto parsed = parse_etcd_endpoints(endpoint);
    if (!parsed.ok()) return parsed.error();
  }
  if (options.request_timeout.count() <= 0) {
    return invalid_argument("the etcd request timeout must be positive");
  }
  std::shared_ptr<grpc::ChannelCredentials> credentials = grpc::InsecureChannelCredentials();
  if (!options.tls_ca_file.empty()) {
    grpc::SslCredentialsOptions ssl;
    auto ca = read_text_file(options.tls_ca_file, "TLS CA");
    if (!ca.ok()) return ca.error();
    ssl.pem_root_certs = *ca;
    if (!options.tls_cert_file.empty() || !options.tls_key_file.empty()) {
      auto cert = read_text_file(options.tls_cert_file, "TLS certificate");
      if (!cert.ok()) return cert.error();
      auto key = read_text_file(options.tls_key_file, "TLS key");
      if (!key.ok()) return key.error();
      ssl.pem_cert_chain = *cert;
      ssl.pem_private_key = *key;
    }
    credentials = grpc::SslCredentials(ssl);
  } else if (!options.tls_cert_file.empty() || !options.tls_key_file.empty()) {
    return invalid_argument("a TLS certificate or key needs a TLS CA file too");
  }
  std::unique_ptr<EtcdClient> client(new EtcdClient(options));
  for (const auto& endpoint : options.endpoints) {
    auto member = std::make_unique<Member>();
    member->endpoint = *parse_etcd_endpoints(endpoint)->begin();
    grpc::ChannelArguments arguments;
    // Come back quickly to a member that was down: failover tries it again soon.
    arguments.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 1000);
    arguments.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
    // Despite its name, gRPC reads this as the least time a connection
    // attempt (TCP, TLS, HTTP/2 settings) gets before it is given up. It must
    // leave room for a slow or distant member: at 100 ms a TLS handshake
    // over a 50 ms round trip could never complete. Calls keep their own
    // deadlines, so a member that hangs still fails over in time.
    arguments.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, kMinConnectAttemptMs);
    // Its own connection per client, as each node has: gRPC would otherwise
    // share one per member among every client of the process with the same
    // arguments (its global subchannel pool), so that the coordinator's
    // renewals would queue behind another client's calls, and a fleet
    // simulated in one process (bench/fleet_bench.cc) would be one connection.
    arguments.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
    member->channel = grpc::CreateCustomChannel(member->endpoint, credentials, arguments);
    member->kv = etcdserverpb::KV::NewStub(member->channel);
    member->lease = etcdserverpb::Lease::NewStub(member->channel);
    member->auth = etcdserverpb::Auth::NewStub(member->channel);
    client->members_.push_back(std::move(member));
  }
  return client;
}

Status EtcdClient::authenticate(Member& member) {
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + options_.request_timeout);
  // As for every call (see call()): wait for a connection under way instead
  // of failing at once on a channel that failed before.
  context.set_wait_for_ready(true);
  etcdserverpb::AuthenticateRequest request;
  request.set_name(options_.user);
  request.set_password(options_.password);
  etcdserverpb::AuthenticateResponse response;
  const grpc::Status status = member.auth->Authenticate(&context, request, &response);
  if (!status.ok()) {
    return Error{ErrorCode::kUnavailable,
                 fmt::format("etcd {} refused user '{}': {}", member.endpoint, options_.user,
                             status.error_message())};
  }
  counters_.sign_ins.fetch_add(1, std::memory_order_relaxed);
  std::lock_guard lock(member.token_mutex);
  member.token = response.token();
  return {};
}

// Runs `invoke(member, context, response)` against each member at most once,
// starting with the one that answered last, until one answers.
template <typename Response, typename Invoke>
Result<Response> EtcdClient::call(std::string_view what, Invoke invoke) {
  const std::size_t count = members_.size();
  const std::size_t first = preferred_.load(std::memory_order_relaxed);
  std::string failures;
  for (std::size_t attempt = 0; attempt < count; ++attempt) {
    const std::size_t index = (first + attempt) % count;
    Member& member = *members_[index];
    for (int auth_round = 0; auth_round < 2; ++auth_round) {
      if (!options_.user.empty()) {
        bool need_token;
        {
          std::lock_guard lock(member.token_mutex);
          need_token = member.token.empty();
        }
        if (need_token) {
          Status authenticated = authenticate(member);
          if (!authenticated.ok()) {
            failures += fmt::format("; {}", authenticated.error().message);
            break;
          }
        }
      }
      // Wait for the connection rather than failing fast: a channel that
      // failed once (etcd started after us, or restarted) otherwise keeps
      // failing calls without ever completing a new connection. A member not
      // connected yet gets a share of the timeout, so that failing over to
      // the next one stays quick.
      grpc::ClientContext context;
      auto budget = options_.request_timeout;
      if (members_.size() > 1 &&
          member.channel->GetState(/*try_to_connect=*/true) != GRPC_CHANNEL_READY) {
        budget = std::max(std::chrono::duration_cast<milliseconds>(budget / members_.size()),
                          kMinConnectBudget);
      }
      context.set_deadline(std::chrono::system_clock::now() + budget);
      context.set_wait_for_ready(true);
      if (!options_.user.empty()) {
        std::lock_guard lock(member.token_mutex);
        context.AddMetadata("token", member.token);
      }
      Response response;
      const auto started = steady_clock::now();
      const grpc::Status status = invoke(member, context, response);
      counters_.record(std::chrono::duration_cast<microseconds>(steady_clock::now() - started),
                       !status.ok());
      if (status.ok()) {
        preferred_.store(index, std::memory_order_relaxed);
        return response;
      }
      if (!options_.user.empty() && auth_round == 0 && is_token_refused(status)) {
        std::lock_guard lock(member.token_mutex);
        member.token.clear();
        continue;
      }
      if (!is_unreachable(status.error_code())) {
        return Error{ErrorCode::kUnavailable, fmt::format("etcd {} {}: {}", member.endpoint,
                                                          what, status.error_message())};
      }
      failures += fmt::format("; {}: {}", member.endpoint, status.error_message());
      break;
    }
  }
  return Error{ErrorCode::kUnavailable,
               fmt::format("etcd {} failed on every endpoint{}", what, failures)};
}

Result<etcdserverpb::RangeResponse> EtcdClient::range(const etcdserverpb::RangeRequest& request) {
  return call<etcdserverpb::RangeResponse>("range", [&](Member& m, auto& context, auto& response) {
    return m.kv->Range(&context, request, &response);
  });
}

Result<etcdserverpb::PutResponse> EtcdClient::put(const etcdserverpb::PutRequest& request) {
  return call<etcdserverpb::PutResponse>("put", [&](Member& m, auto& context, auto& response) {
    return m.kv->Put(&context, request, &response);
  });
}

Result<etcdserverpb::DeleteRangeResponse> EtcdClient::delete_range(
    const etcdserverpb::DeleteRangeRequest& request) {
  return call<etcdserverpb::DeleteRangeResponse>(
      "delete", [&](Member& m, auto& context, auto& response) {
        return m.kv->DeleteRange(&context, request, &response);
      });
}

Result<etcdserverpb::TxnResponse> EtcdClient::txn(const etcdserverpb::TxnRequest& request) {
  return call<etcdserverpb::TxnResponse>("txn", [&](Member& m, auto& context, auto& response) {
    return m.kv->Txn(&context, request, &response);
  });
}

Result<etcdserverpb::LeaseGrantResponse> EtcdClient::lease_grant(std::chrono::seconds ttl) {
  etcdserverpb::LeaseGrantRequest request;
  request.set_ttl(ttl.count());
  auto granted = call<etcdserverpb::LeaseGrantResponse>(
      "lease grant", [&](Member& m, auto& context, auto& response) {
        return m.lease->LeaseGrant(&context, request, &response);
      });
  if (granted.ok() && !granted->error().empty()) {
    return Error{ErrorCode::kUnavailable, "etcd lease grant: " + granted->error()};
  }
  return granted;
}

Status EtcdClient::lease_revoke(std::int64_t lease_id) {
  etcdserverpb::LeaseRevokeRequest request;
  request.set_id(lease_id);
  auto revoked = call<etcdserverpb::LeaseRevokeResponse>(
      "lease revoke", [&](Member& m, auto& context, auto& response) {
        grpc::Status status = m.lease->LeaseRevoke(&context, request, &response);
        // "etcdserver: requested lease not found": gone already, which is what we want.
        if (status.error_code() == grpc::StatusCode::NOT_FOUND) return grpc::Status::OK;
        return status;
      });
  if (!revoked.ok()) return revoked.error();
  return {};
}

Result<etcdserverpb::LeaseKeepAliveResponse> EtcdClient::lease_keep_alive(std::int64_t lease_id) {
  return call<etcdserverpb::LeaseKeepAliveResponse>(
      "lease keep-alive", [&](Member& m, grpc::ClientContext& context, auto& response) {
        auto stream = m.lease->LeaseKeepAlive(&context);
        etcdserverpb::LeaseKeepAliveRequest request;
        request.set_id(lease_id);
        if (stream->Write(request) && stream->Read(&response)) {
          stream->WritesDone();
          grpc::Status finished = stream->Finish();
          // The round's answer arrived; how the stream ended does not matter.
          (void)finished;
          return grpc::Status::OK;
        }
        stream->WritesDone();
        grpc::Status status = stream->Finish();
        if (status.ok()) status = grpc::Status(grpc::StatusCode::UNAVAILABLE, "stream closed");
        return status;
      });
}

Result<etcdserverpb::LeaseTimeToLiveResponse> EtcdClient::lease_time_to_live(
    std::int64_t lease_id) {
  etcdserverpb::LeaseTimeToLiveRequest request;
  request.set_id(lease_id);
  return call<etcdserverpb::LeaseTimeToLiveResponse>(
      "lease time-to-live", [&](Member& m, auto& context, auto& response) {
        return m.lease->LeaseTimeToLive(&context, request, &response);
      });
}

}  // namespace snowid::coord
