// The HTTP/1.1 transport of snowidd: Asio sockets (optionally TLS) with
// Boost.Beast's request parser, keep-alive and pipelining, limits on header
// and body size, an idle timeout before a request's first byte and a read
// timeout for the rest of it and for writing the answer (a slow client cannot
// hold a connection), and a cap on open connections. Requests are answered by
// handle_http().
//
// Threading: the acceptor runs on the caller's io_context; each accepted
// connection is handed to one of `io_threads` connection threads, each with
// an io_context of its own, and lives on that thread alone. So a request
// takes no lock and no cross-thread hand-off on its way through.
#pragma once

#include <boost/asio/io_context.hpp>
#include <memory>

#include "http_options.h"
#include "listener.h"
#include "service.h"

namespace snowid::server {

class HttpServer final : public Listener {
 public:
  HttpServer(boost::asio::io_context& acceptor_io, IdService& service, HttpOptions options);
  ~HttpServer() override;

  std::string_view protocol() const override { return "http"; }
  // Loads the TLS certificate if configured, listens on the configured
  // endpoint with at most descriptors.connections_for("http") open
  // connections, and starts the connection threads; returns the bound endpoint.
  Result<Endpoint> start(const DescriptorBudget& descriptors) override;
  // Stops accepting and starts closing connections that wait for a request;
  // connections finish the request they are reading or answering.
  void stop_accepting() override;
  std::int64_t open_connections() const override;
  void set_connection_limit(std::int64_t max_connections) override;
  // Stops the connection threads (closing what is still open) and joins them.
  void stop() override;

 private:
  struct Impl;
  std::shared_ptr<Impl> impl_;
};

}  // namespace snowid::server
