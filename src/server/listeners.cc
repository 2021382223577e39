#include "grpc_service.h"
#include "http_server.h"
#include "listener.h"
#include "resp_service.h"
#include "thrift_service.h"

namespace snowid::server {

namespace {

namespace asio = boost::asio;

// One protocol snowidd may serve: whether the configuration turns it on, its
// connection limit, its own checks, and how to make it.
struct ListenerKind {
  const char* protocol;
  bool (*enabled)(const ServerConfig&);
  std::int64_t (*max_connections)(const ServerConfig&);
  Status (*check)(const ServerConfig&);
  std::unique_ptr<Listener> (*make)(asio::io_context&, IdService&);
};

bool always(const ServerConfig&) { return true; }
Status nothing_to_check(const ServerConfig&) { return {}; }

// Every protocol, in start order: HTTP first (probes), then the rest.
constexpr ListenerKind kListenerKinds[] = {
    {"http", always, [](const ServerConfig& c) -> std::int64_t { return c.http.max_connections; },
     nothing_to_check,
     [](asio::io_context& io, IdService& s) -> std::unique_ptr<Listener> {
       return std::make_unique<HttpServer>(io, s);
     }},
    {"grpc", [](const ServerConfig& c) { return c.grpc.endpoint.has_value(); },
     [](const ServerConfig& c) -> std::int64_t { return c.grpc.max_connections; },
     [](const ServerConfig& c) { return check_grpc_options(c.grpc); },
     [](asio::io_context&, IdService& s) -> std::unique_ptr<Listener> {
       return std::make_unique<GrpcServer>(s);
     }},
    {"thrift", [](const ServerConfig& c) { return c.thrift.listener.endpoint.has_value(); },
     [](const ServerConfig& c) -> std::int64_t { return c.thrift.listener.max_connections; },
     [](const ServerConfig& c) { return check_thrift_options(c.thrift); }, make_thrift_listener},
    {"resp", [](const ServerConfig& c) { return c.resp.listener.endpoint.has_value(); },
     [](const ServerConfig& c) -> std::int64_t { return c.resp.listener.max_connections; },
     [](const ServerConfig& c) { return check_resp_options(c.resp); }, make_resp_listener},
};

}  // namespace

std::vector<std::unique_ptr<Listener>> make_listeners(asio::io_context& main_io,
                                                      IdService& service) {
  std::vector<std::unique_ptr<Listener>> listeners;
  for (const ListenerKind& kind : kListenerKinds) {
    if (kind.enabled(service.config())) listeners.push_back(kind.make(main_io, service));
  }
  return listeners;
}

std::vector<std::pair<std::string, std::int64_t>> wanted_connections(const ServerConfig& config) {
  std::vector<std::pair<std::string, std::int64_t>> wanted;
  for (const ListenerKind& kind : kListenerKinds) {
    if (kind.enabled(config)) wanted.emplace_back(kind.protocol, kind.max_connections(config));
  }
  return wanted;
}

Status check_listener_options(const ServerConfig& config) {
  for (const ListenerKind& kind : kListenerKinds) {
    if (Status s = kind.check(config); !s.ok()) return s;
  }
  return {};
}

}  // namespace snowid::server
