#include "listeners.h"

#include <optional>

#include "grpc_service.h"
#include "http_server.h"
#include "resp_service.h"
#include "thrift_service.h"

namespace snowid::server {

namespace {

namespace asio = boost::asio;

// One protocol snowidd may serve: its configured address (nullopt: the
// configuration turns it off), its connection limit, its own checks, and
// how to make it.
struct ListenerKind {
  const char* protocol;
  std::optional<Endpoint> (*endpoint)(const ServerConfig&);
  std::int64_t (*max_connections)(const ServerConfig&);
  Status (*check)(const ServerConfig&);
  std::unique_ptr<Listener> (*make)(asio::io_context&, IdService&, const ServerConfig&);
};

// Every protocol, in start order: HTTP first (probes), then the rest.
constexpr ListenerKind kListenerKinds[] = {
    {"http", [](const ServerConfig& c) -> std::optional<Endpoint> { return c.http.endpoint; },
     [](const ServerConfig& c) -> std::int64_t { return c.http.max_connections; },
     [](const ServerConfig& c) { return check_http_options(c.http); },
     [](asio::io_context& io, IdService& s, const ServerConfig& c) -> std::unique_ptr<Listener> {
       return std::make_unique<HttpServer>(io, s, c.http);
     }},
    {"grpc", [](const ServerConfig& c) { return c.grpc.endpoint; },
     [](const ServerConfig& c) -> std::int64_t { return c.grpc.max_connections; },
     [](const ServerConfig& c) { return check_grpc_options(c.grpc); },
     [](asio::io_context&, IdService& s, const ServerConfig& c) -> std::unique_ptr<Listener> {
       return std::make_unique<GrpcServer>(s, c.grpc);
     }},
    {"thrift", [](const ServerConfig& c) { return c.thrift.listener.endpoint; },
     [](const ServerConfig& c) -> std::int64_t { return c.thrift.listener.max_connections; },
     [](const ServerConfig& c) { return check_thrift_options(c.thrift, !c.net.tls_cert.empty()); },
     [](asio::io_context& io, IdService& s, const ServerConfig& c) {
       return make_thrift_listener(io, s, c.thrift);
     }},
    {"resp", [](const ServerConfig& c) { return c.resp.listener.endpoint; },
     [](const ServerConfig& c) -> std::int64_t { return c.resp.listener.max_connections; },
     [](const ServerConfig& c) { return check_resp_options(c.resp, !c.net.tls_cert.empty()); },
     [](asio::io_context& io, IdService& s, const ServerConfig& c) {
       return make_resp_listener(io, s, c.resp);
     }},
};

}  // namespace

std::vector<std::unique_ptr<Listener>> make_listeners(asio::io_context& main_io,
                                                      IdService& service,
                                                      const ServerConfig& config) {
  std::vector<std::unique_ptr<Listener>> listeners;
  for (const ListenerKind& kind : kListenerKinds) {
    if (kind.endpoint(config)) listeners.push_back(kind.make(main_io, service, config));
  }
  return listeners;
}

std::vector<std::pair<std::string, std::int64_t>> wanted_connections(const ServerConfig& config) {
  std::vector<std::pair<std::string, std::int64_t>> wanted;
  for (const ListenerKind& kind : kListenerKinds) {
    if (kind.endpoint(config)) wanted.emplace_back(kind.protocol, kind.max_connections(config));
  }
  return wanted;
}

Status check_listener_options(const ServerConfig& config) {
  for (const ListenerKind& kind : kListenerKinds) {
    if (Status s = kind.check(config); !s.ok()) return s;
  }
  return {};
}

std::vector<std::pair<std::string, std::string>> configured_endpoints(const ServerConfig& config) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const ListenerKind& kind : kListenerKinds) {
    if (auto endpoint = kind.endpoint(config)) out.emplace_back(kind.protocol, endpoint->text());
  }
  return out;
}

std::vector<std::string> configured_addresses(const ServerConfig& config) {
  std::vector<std::string> out;
  for (const auto& [protocol, address] : configured_endpoints(config)) {
    out.push_back(protocol + " " + address);
  }
  return out;
}

}  // namespace snowid::server
