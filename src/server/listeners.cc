#include "grpc_service.h"
#include "http_server.h"
#include "listener.h"

namespace snowid::server {

std::vector<std::unique_ptr<Listener>> make_listeners(boost::asio::io_context& main_io,
                                                      IdService& service) {
  std::vector<std::unique_ptr<Listener>> listeners;
  listeners.push_back(std::make_unique<HttpServer>(main_io, service));
  listeners.push_back(std::make_unique<GrpcServer>(service));
  return listeners;
}

}  // namespace snowid::server
