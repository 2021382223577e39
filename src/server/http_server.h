// The HTTP/1.1 transport of snowidd (Boost.Beast on Asio): keep-alive and
// pipelining, limits on header and body size, an idle timeout before a
// request's first byte and a read timeout for the rest of it (a slow client
// cannot hold a connection), and a cap on open connections. Requests are
// answered by handle_http().
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <memory>

#include "service.h"

namespace snowid::server {

class HttpServer {
 public:
  HttpServer(boost::asio::io_context& io, IdService& service);
  ~HttpServer();

  // Binds and listens on the configured endpoint; returns the bound one.
  Result<Endpoint> listen();
  // Stops accepting; open connections finish their current request.
  void stop_accepting();

 private:
  struct Impl;
  std::shared_ptr<Impl> impl_;
};

}  // namespace snowid::server
